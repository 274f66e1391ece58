#pragma once
// The one place every tool call passes through (backend_tools.md §6.4–6.7):
// policy check, resource key, lane (per tool, per key, per session or sandbox), the call, and the
// conversion of any tool fault into a `tool_execution_exception` failure.
//
// Thread safety: any number of dispatches may run from any threads at once; calls on
// one lane run one at a time, in the order async_dispatch_flow_tool was *called* (the
// policy check, the resource key and the place in the lane are taken by the call
// itself, before the awaitable first runs). Cancellation: cancelling the awaiting
// coroutine while the call waits for its lane takes it out of the queue (the tool never
// runs); during the body it cancels the body. Errors: a policy denial and every fault of
// the tool (its resource key, its body) become a failure result, never an exception.
// Rethrown: cancellation (operation_aborted, async::CancelledError),
// async::RuntimeShutdownError, and a failure to encode the result. dispatch_flow_tool
// also throws async::DeadlockError on a runtime io thread.
#include <rath/tool/serialize.hpp>

#include <boost/asio/awaitable.hpp>

namespace rath {
class Session;
}

namespace rath::async {
class Runtime;
}

namespace rath::tool {

// The lane a call takes: tool group + ("unsafe") or ("safe", key...), plus
// "sandbox:<handle>" for a sandbox-scoped tool on an open sandbox, else "session:<id>".
// Lanes never span sessions (but for a sandbox shared by sessions): a tool that is not
// parallel-safe runs one call at a time per session, and a fan-out's sessions call it
// at once.
[[nodiscard]] std::string lane_key(const FlowToolCall& tool, const ResourceKey& key, const Session& session);

[[nodiscard]] boost::asio::awaitable<ToolDispatchResult> async_dispatch_flow_tool(
    Session session, FlowToolPtr tool, boost::json::object arguments, rath::async::Runtime* runtime = nullptr);
[[nodiscard]] ToolDispatchResult dispatch_flow_tool(const Session& session, FlowToolPtr tool,
                                                    boost::json::object arguments,
                                                    rath::async::Runtime* runtime = nullptr);

// "<ExcType>: <message>" and the type name for an exception (Python's names for
// rath's tool errors and std::runtime_error).
[[nodiscard]] std::pair<std::string, std::string> describe_exception(std::exception_ptr e);

}  // namespace rath::tool
