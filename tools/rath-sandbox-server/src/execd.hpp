#pragma once
// execd (alibaba/OpenSandbox specs/execd-api.yaml) for one sandbox of the server:
// /ping, /command (SSE, foreground and background), DELETE /command, /command/status,
// /command/{id}/logs, /code/context(s) and /code (SSE) with long-lived python and bash
// interpreters, /session (bash sessions), /files/* and /directories*, /metrics and
// /metrics/watch. Processes run inside the sandbox's container; file operations act on
// its file system through /proc/<pid>/root.
//
// Thread safety: handle() may run concurrently for any sandboxes and requests.
// Cancellation: a client that goes away kills the foreground command or code run it
// was streaming. Errors: ErrorResponse{code,message} answers (execd's codes).
#include "manager.hpp"

#include <rath/net/http_server.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string_view>

namespace rath::sandbox_server {

class Execd {
public:
    explicit Execd(Manager& manager) : manager_(manager) {}

    // `path` is the execd path ("/ping", "/files/info", ...).
    boost::asio::awaitable<void> handle(std::shared_ptr<Sandbox> sb, std::string_view path, rath::net::ServerRequest& req,
                                        rath::net::ServerExchange& ex);

    // Kills what execd started for the sandbox (interpreters, commands). Called on stop.
    static void release(Sandbox& sb);

private:
    Manager& manager_;
};

}  // namespace rath::sandbox_server
