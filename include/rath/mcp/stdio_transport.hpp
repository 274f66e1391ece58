#pragma once
// The stdio transport (basic/transports.mdx "stdio"): the server is a child process;
// messages are UTF-8 JSON-RPC texts, one per line, on its stdin and stdout.
//
// - Framing: a line longer than max_line_bytes ends the session (TransportError from
//   async_receive naming the cap); a last line without its newline is dropped when
//   the server exits. Empty lines are skipped.
// - stderr is read all the time (a chatty server never blocks on a full pipe) and each
//   line goes to the logger, channel rath.mcp, at info level (cut at 4 KiB).
// - The child runs in its own process group with the environment of the reference SDK
//   (HOME, LOGNAME, PATH, SHELL, TERM, USER from the parent, values starting with "()"
//   skipped) plus `env`, unless inherit_environment is set.
// - Close (backend_tools.md §9.5): close stdin, wait close_grace (2 s), SIGTERM the
//   group, wait close_grace, SIGKILL the group, reap. Never blocks an io thread.
//
// Thread safety, cancellation and errors: as rath/mcp/transport.hpp states.
#include <rath/mcp/transport.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::mcp {

struct StdioServerParams {
    std::vector<std::string> command;               // argv; argv[0] is searched on PATH
    std::map<std::string, std::string> env{};       // on top of the base environment
    bool inherit_environment = false;               // base = the whole parent environment
    std::optional<std::string> cwd{};               // default: the parent's
    std::size_t max_line_bytes = std::size_t{16} << 20;
    std::chrono::milliseconds close_grace{2000};
    std::string name{};                             // for logs; default: argv[0]
};

// Throws TransportError when `command` is empty.
[[nodiscard]] std::unique_ptr<Transport> make_stdio_transport(StdioServerParams params);

}  // namespace rath::mcp
