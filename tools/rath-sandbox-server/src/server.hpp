#pragma once
// rath-sandbox-server's HTTP face: the OpenSandbox lifecycle API under /v1 (API-key
// header OPEN-SANDBOX-API-KEY when a key is configured) and each sandbox's execd under
// /sandboxes/{id}/port/44772/... on the same listener (the address the endpoints API
// returns, with the sandbox's X-EXECD-ACCESS-TOKEN header), plus GET /health.
//
// Thread safety: start/stop from one controlling thread (not an io thread of the
// runtime); requests are served concurrently on the runtime's io threads.
// Errors: start() throws std::system_error when it cannot listen.
#include "manager.hpp"

#include <rath/net/http_server.hpp>

#include <memory>
#include <optional>
#include <string>

namespace rath::async {
class Runtime;
}

namespace rath::sandbox_server {

inline constexpr int execd_port = 44772;

struct SandboxServerOptions {
    ServerOptions sandboxes;
    rath::net::HttpServerOptions http;
    // host:port put into endpoint URLs; unset: the request's Host header.
    std::optional<std::string> public_host;
    std::chrono::milliseconds sweep_interval{1000};
};

class SandboxServer {
public:
    SandboxServer(SandboxServerOptions options, rath::async::Runtime& runtime);
    ~SandboxServer();  // stop()
    SandboxServer(const SandboxServer&) = delete;
    SandboxServer& operator=(const SandboxServer&) = delete;

    // Reaps what a previous server left in the state directory, then listens. Returns the port.
    std::uint16_t start();
    [[nodiscard]] std::string base_url() const;
    [[nodiscard]] std::uint16_t port() const;
    [[nodiscard]] Manager& manager() noexcept;
    // Stops listening, stops every sandbox, and waits for the connections (bounded).
    void stop();

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::sandbox_server
