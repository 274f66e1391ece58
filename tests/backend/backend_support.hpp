#pragma once
// Shared helpers for the backend, conformance and tool suites.
#include <rath/backend/bwrap.hpp>
#include <rath/backend/opensandbox.hpp>
#include <rath/backend/registry.hpp>

#include "support/sandbox_server.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace rath::test {

namespace rb = rath::backend;

// "" when bwrap can start a sandbox here; otherwise why not (printed once per suite).
inline const std::string& bwrap_unavailable_reason() {
    static const std::string why = [] {
        auto w = rb::BwrapBackend::probe();
        if (!w.empty()) std::fprintf(stderr, "NOTE: bwrap tests are skipped: %s\n", w.c_str());
        return w;
    }();
    return why;
}

// "" when the opensandbox cases can run (a rath-sandbox-server binary and user
// namespaces); printed once. Under RATH_CI a missing server fails the case instead.
inline const std::string& opensandbox_unavailable_reason() {
    static const std::string why = [] {
        auto w = SandboxServerProcess::unavailable_reason();
        if (w.empty()) w = bwrap_unavailable_reason();
        if (!w.empty()) std::fprintf(stderr, "NOTE: opensandbox tests are skipped: %s\n", w.c_str());
        return w;
    }();
    return why;
}

inline bool opensandbox_runs() {
    const auto& why = opensandbox_unavailable_reason();
    if (!why.empty() && std::getenv("RATH_CI")) FAIL("opensandbox tests cannot run in CI: " << why);
    return why.empty();
}

// The rath-sandbox-server the suite's opensandbox cases share, started on first use
// and stopped (SIGTERM) when the test program exits.
inline SandboxServerProcess& shared_sandbox_server() {
    static std::unique_ptr<SandboxServerProcess> server = [] {
        auto s = std::make_unique<SandboxServerProcess>();
        s->start();
        return s;
    }();
    return *server;
}

// A private identity registry for the suite (never the developer's ~/.openrath).
inline const std::filesystem::path& opensandbox_registry_root() {
    static TempDir dir;
    return dir.path();
}

// Points an opensandbox backend at `server`: the "host" image, an entrypoint that
// exists there, the server's API key and the suite's registry.
inline void configure_opensandbox(rb::Backend& b, const SandboxServerProcess& server) {
    auto& ob = dynamic_cast<rb::OpenSandboxBackend&>(b);
    auto o = ob.options();
    o.domain = server.domain();
    o.api_key = server.api_key();
    o.default_image = "host";
    o.default_entrypoint = {"sleep", "infinity"};
    o.registry_root = opensandbox_registry_root();
    o.ready_timeout = 30;
    ob.set_options(o);
}

// The backends whose workspace is a host directory (local, trusted-host, bwrap).
inline std::vector<std::string> host_backends() {
    std::vector<std::string> v{"local", "trusted-host"};
    if (bwrap_unavailable_reason().empty()) v.push_back("bwrap");
    return v;
}

// Every backend the conformance cases run against: the host ones and opensandbox
// against a rath-sandbox-server the suite starts.
inline std::vector<std::string> conformance_backends() {
    auto v = host_backends();
    if (opensandbox_runs()) v.push_back("opensandbox");
    return v;
}

// Backends that confine paths and commands (security cases).
inline std::vector<std::string> confined_backends() {
    std::vector<std::string> v{"local"};
    if (bwrap_unavailable_reason().empty()) v.push_back("bwrap");
    return v;
}

// By value: the argument is usually a temporary DispatchResult.
template <class T>
T as(const rb::DispatchResult& r) {
    if (auto* f = std::get_if<rb::ToolExecutionFailure>(&r))
        if (!std::is_same_v<T, rb::ToolExecutionFailure>)
            FAIL("unexpected failure " << f->kind << ": " << f->message);
    REQUIRE(std::holds_alternative<T>(r));
    return std::get<T>(r);
}

inline rb::ToolExecutionFailure failure(const rb::DispatchResult& r) { return as<rb::ToolExecutionFailure>(r); }

// A fresh singleton for `name` (the Python fixture's _reset_instances()).
inline rb::Backend& fresh_backend(const std::string& name) {
    rb::testing::reset_backend_instances();
    auto& b = rb::get_backend(name);
    if (name == "opensandbox") configure_opensandbox(b, shared_sandbox_server());
    return b;
}

inline rb::CommandRun shell(std::string cmd, std::optional<double> timeout = std::nullopt) {
    rb::CommandRun c;
    c.cmd = std::move(cmd);
    c.timeout = timeout;
    return c;
}

inline rb::CommandRun argv(std::vector<std::string> a) {
    rb::CommandRun c;
    c.cmd = std::move(a);
    return c;
}

}  // namespace rath::test
