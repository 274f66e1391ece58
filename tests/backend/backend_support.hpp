#pragma once
// Shared helpers for the backend, conformance and tool suites.
#include <rath/backend/bwrap.hpp>
#include <rath/backend/registry.hpp>

#include <doctest/doctest.h>

#include <cstdio>
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

// Every backend the conformance cases run against.
inline std::vector<std::string> conformance_backends() {
    std::vector<std::string> v{"local", "trusted-host"};
    if (bwrap_unavailable_reason().empty()) v.push_back("bwrap");
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
    return rb::get_backend(name);
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
