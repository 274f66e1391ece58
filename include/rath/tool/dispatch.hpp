#pragma once
// The one place every tool call passes through (backend_tools.md §6.4–6.7):
// policy check, resource key, lane (per tool, per key, per sandbox), the call, and the
// conversion of any tool fault into a `tool_execution_exception` failure.
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
// "sandbox:<handle>" / "session:<id>" for sandbox-scoped tools, "session:<id>" for
// parallel-safe ones (a safe tool orders calls within a session, not across sessions).
std::string lane_key(const FlowToolCall& tool, const ResourceKey& key, const Session& session);

boost::asio::awaitable<ToolDispatchResult> async_dispatch_flow_tool(Session session, FlowToolPtr tool,
                                                                    boost::json::object arguments,
                                                                    rath::async::Runtime* runtime = nullptr);
ToolDispatchResult dispatch_flow_tool(const Session& session, FlowToolPtr tool, boost::json::object arguments,
                                      rath::async::Runtime* runtime = nullptr);

// "<ExcType>: <message>" and the type name for an exception (Python's names for
// rath's tool errors and std::runtime_error).
std::pair<std::string, std::string> describe_exception(std::exception_ptr e);

}  // namespace rath::tool
