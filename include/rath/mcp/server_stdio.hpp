#pragma once
// The stdio transport of rath::mcp::Server (basic/transports.mdx "stdio"): one session,
// one JSON-RPC message (or batch) per line, read from `in_fd` and written to `out_fd`
// (stdin and stdout by default); nothing else is written to out_fd. Both descriptors
// are driven asynchronously on the runtime's io threads (pipes, sockets, terminals; a
// regular file, which is always ready, is read as it comes), so no io thread ever
// waits on a peer.
//
// When the input ends (the client closed its end), the requests still running get up
// to drain_timeout to finish and have their responses written; then the session is
// closed (what still runs is cancelled) and the call returns.
//
// Thread safety: one call serves one pair of descriptors; several calls may serve
// different pairs at once. Cancellation: async_serve_stdio honours the awaiting
// coroutine's slot (the session is closed). Errors: a line longer than max_line_bytes
// ends the session (logged on "rath.mcp"), as does a write error; serve_stdio blocks
// (async::DeadlockError on a runtime io thread).
#include <rath/mcp/server.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace rath::mcp {

struct StdioServeOptions {
    int in_fd = 0;
    int out_fd = 1;
    std::size_t max_line_bytes = std::size_t{16} << 20;
    std::chrono::milliseconds drain_timeout{5000};
};

[[nodiscard]] boost::asio::awaitable<void> async_serve_stdio(std::shared_ptr<Server> server,
                                                             StdioServeOptions options = {});
void serve_stdio(std::shared_ptr<Server> server, StdioServeOptions options = {});

}  // namespace rath::mcp
