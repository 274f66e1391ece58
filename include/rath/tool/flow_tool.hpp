#pragma once
// FlowToolCall (backend_tools.md §6.1): the object a model calls by name, as distinct
// from a backend payload. It carries a JSON-Schema object for its parameters and
// runs with the session it was called for.
//
// Thread safety: one tool object serves every session that lists it, and its queries
// (parallel_safe, resource_key, lane_group, ...) may be called from any thread at once.
// The dispatcher runs one session's calls of a tool one at a time unless it is
// parallel_safe() (calls of different keys run at once); calls of different sessions
// always may run at once (of a sandbox_scoped() tool: on different sandboxes), so
// async_call must allow concurrent calls and guard any state it shares across sessions.
// Cancellation: async_call is cancelled through the awaiting coroutine's slot; a body
// should let the cancellation error escape (the dispatcher rethrows it rather than
// reporting a failure). Errors: throwing is how a body fails (see async_call).
#include <rath/backend/result.hpp>
#include <rath/tool/error.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rath {
class Session;
}

namespace rath::tool {

// A resource key: same key in call order, different keys in parallel (§6.5).
using ResourceKey = std::vector<std::string>;

// What a tool returns: a backend result (built-ins: a ToolResult or a bool) or any
// JSON value (user tools).
using ToolReturn = std::variant<boost::json::value, backend::DispatchResult>;

class FlowToolCall : public std::enable_shared_from_this<FlowToolCall> {
public:
    FlowToolCall(std::string name, std::optional<std::string> description, boost::json::object parameters);
    virtual ~FlowToolCall();
    FlowToolCall(const FlowToolCall&) = delete;
    FlowToolCall& operator=(const FlowToolCall&) = delete;

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const std::optional<std::string>& description() const noexcept { return description_; }
    // The OpenAI function `parameters` (a JSON-Schema object).
    [[nodiscard]] const boost::json::object& parameters() const noexcept { return parameters_; }

    // Parallel-safe tools lane per key and session; others run one at a time per session.
    [[nodiscard]] virtual bool parallel_safe() const { return false; }
    // Sandbox-scoped tools lane per sandbox (built-ins); others per session.
    [[nodiscard]] virtual bool sandbox_scoped() const { return false; }
    // Whether running a call twice with the same arguments has the effect of running it
    // once (reads, whole-file writes): what a durable runner (rath-worker) consults when
    // the process that started a call died before it finished. An idempotent call is run
    // again; any other is not, and its result says it was interrupted. Default false:
    // a tool is assumed to have side effects unless it says otherwise. The built-ins:
    // read_workspace_file, write_workspace_file (it replaces the whole file),
    // list_workspace_files and workspace_path_exists are idempotent; run_shell_command
    // and run_code are not. make_tool's ToolTraits::idempotent sets it for user tools;
    // MCP tools take it from their server's annotations or config (rath/mcp/tools.hpp).
    [[nodiscard]] virtual bool idempotent() const { return false; }
    // Default: ("safe", name) when parallel_safe, else ("global").
    [[nodiscard]] virtual ResourceKey resource_key(const boost::json::object& arguments) const;
    // Tools that share this name share lanes (the four filesystem built-ins share
    // "builtin:fs" so a write then a read of one path stay in order). Default: this
    // instance.
    [[nodiscard]] virtual std::string lane_group() const;

    // The body. `session` is the dispatch view of the session the call is for (reading
    // its transcript never waits). Throwing is how a tool fails: the dispatcher turns
    // the exception into a tool_execution_exception result.
    [[nodiscard]] virtual boost::asio::awaitable<ToolReturn> async_call(Session session,
                                                                        boost::json::object arguments) = 0;
    // Runs the body directly on the default runtime (no policy, no lane: that is
    // dispatch_flow_tool) and blocks; DeadlockError on a runtime thread.
    [[nodiscard]] ToolReturn call(const Session& session, boost::json::object arguments);

private:
    std::string name_;
    std::optional<std::string> description_;
    boost::json::object parameters_;
};

using FlowToolPtr = std::shared_ptr<FlowToolCall>;

// Runs `body` on the blocking pool of the runtime the caller runs on (the default
// runtime's off a runtime thread) and resumes the caller on its own executor: where a
// synchronous tool body goes, so that it never stalls an io thread.
[[nodiscard]] boost::asio::awaitable<ToolReturn> run_blocking(std::function<ToolReturn()> body);

}  // namespace rath::tool
