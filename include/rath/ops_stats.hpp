#pragma once
// Process-wide counts of operations a run makes through shared objects that no run's
// LoopObserver sees: MCP tool calls made through McpServer (every MCP tool of every
// agent, rath/mcp/tools.hpp), by server name and outcome, and memory store operations
// (MemoryStore::async_dispatch and dispatch), by op and outcome. What a service exports
// as metrics (examples/13_agent_service renders them on /metrics once nonzero).
//
// Outcomes. MCP: ok, tool_error (the tool answered isError), timeout (no answer within
// the call's deadline), cancelled (the caller was cancelled), error (anything else: the
// server could not be reached, answered a JSON-RPC error, disconnected). Memory: ok,
// failure (an ExecutionFailure value), cancelled, error (a thrown MemoryStoreClosed or
// UnsupportedMemoryOp, or any other exception).
//
// Thread safety: counting and the snapshot may run on any threads at once (a mutex per
// kind, taken once per operation). Counters only grow, for the life of the process.
// Nothing here throws except std::bad_alloc.
#include <cstdint>
#include <string>
#include <vector>

namespace rath {

struct OpStats {
    // The MCP server's name / the memory op: write, read, list, tree, find, search,
    // resource or commit.
    std::string subject;
    std::string outcome;
    std::uint64_t count = 0;
    double seconds = 0;  // total time of those operations, from the call to its result
};

// Sorted by subject, then outcome; only pairs that occurred.
[[nodiscard]] std::vector<OpStats> mcp_call_stats();
[[nodiscard]] std::vector<OpStats> memory_op_stats();

}  // namespace rath
