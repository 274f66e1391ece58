#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/settled.hpp>
#include <rath/backend/host_backend.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/policy.hpp>

#include "lib/session/session_state.hpp"
#include "lib/text/demangle.hpp"

#include <boost/system/system_error.hpp>

#include <cxxabi.h>
#include <optional>
#include <stdexcept>
#include <typeinfo>

namespace rath::tool {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The class name without its namespaces, as Python's type(e).__name__.
std::string demangled_leaf(const std::type_info* ti) {
    if (!ti) return "Exception";
    std::string name = rath::detail::demangled_type_name(*ti);
    if (auto pos = name.rfind("::"); pos != std::string::npos) name.erase(0, pos + 2);
    return name;
}

// Cancellation and runtime shutdown are never converted into failures (§6.7).
bool is_uncatchable(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const rath::async::CancelledError&) {
        return true;
    } catch (const rath::async::RuntimeShutdownError&) {
        return true;
    } catch (const boost::system::system_error& se) {
        return se.code() == asio::error::operation_aborted;
    } catch (...) {
        return false;
    }
}

backend::ToolExecutionFailure exception_failure(std::exception_ptr e) {
    auto [message, type] = describe_exception(e);
    return backend::ToolExecutionFailure{"tool_execution_exception", message, type};
}

}  // namespace

std::pair<std::string, std::string> describe_exception(std::exception_ptr e) {
    std::string type, what;
    try {
        std::rethrow_exception(e);
    } catch (const ToolError& x) {
        type = x.python_type();
        what = x.what();
    } catch (const rath::async::TimeoutError& x) {
        type = "TimeoutError";
        what = x.what();
    } catch (const std::invalid_argument& x) {
        type = "ValueError";
        what = x.what();
    } catch (const std::out_of_range& x) {
        type = "IndexError";
        what = x.what();
    } catch (const std::exception& x) {
        type = demangled_leaf(abi::__cxa_current_exception_type());
        if (type == "runtime_error") type = "RuntimeError";
        what = x.what();
    } catch (...) {
        type = demangled_leaf(abi::__cxa_current_exception_type());
        what = "unknown exception";
    }
    return {type + ": " + what, type};
}

namespace {
// Tool group + ("unsafe") or ("safe", key...); \x1f separates parts so that no key
// text can forge another lane.
// `spare`: room reserved for what the caller appends.
std::string base_lane(const FlowToolCall& tool, const ResourceKey& key, std::size_t spare = 0) {
    std::string lane = tool.lane_group();
    std::size_t size = lane.size() + 7 + spare;
    for (auto& k : key) size += k.size() + 1;
    lane.reserve(size);
    auto add = [&](std::string_view part) {
        lane += '\x1f';
        lane += part;
    };
    if (tool.parallel_safe()) {
        add("safe");
        for (auto& k : key) add(k);
    } else {
        add("unsafe");
    }
    return lane;
}

// The part of a lane that makes it one session's (lane_key and the dispatch build the
// same lanes from it).
constexpr std::string_view session_part = "\x1fsession:";
void append_session_part(std::string& lane, const Session& session) {
    lane.append(session_part).append(session.id());
}
}  // namespace

std::string lane_key(const FlowToolCall& tool, const ResourceKey& key, const Session& session) {
    std::string lane = base_lane(tool, key);
    if (tool.sandbox_scoped()) {
        auto sb = session.sandbox();
        if (sb && !sb->closed())
            lane += "\x1fsandbox:" + std::string(sb->backend_name()) + ":" + sb->handle();
        else
            append_session_part(lane, session);
    } else {
        // Every tool orders calls within one session's transcript, never across
        // sessions: a process-wide lane would serialize a fan-out of thousands of
        // sessions on one tool. A tool that is not parallel-safe runs one call at a time
        // per session; state it shares across sessions is its own to guard.
        append_session_part(lane, session);
    }
    return lane;
}

namespace {

// The host directory of the session's open sandbox when it runs on this host (what a
// command's workspace-relative executable name refers to), else nullopt.
std::optional<std::string> host_workspace(const Session& s) {
    auto sb = s.sandbox();
    if (!sb || sb->closed() || !dynamic_cast<const backend::HostBackend*>(&sb->backend())) return std::nullopt;
    return sb->handle();
}

// The call with its failures turned into the dispatch result (§6.7), in one frame.
asio::awaitable<ToolDispatchResult> guarded_call(FlowToolPtr t, Session s, json::object a) {
    std::exception_ptr err;
    std::optional<ToolReturn> raw;
    try {
        raw.emplace(co_await t->async_call(std::move(s), std::move(a)));
    } catch (...) {
        err = std::current_exception();
    }
    if (raw) co_return make_dispatch_result(std::move(*raw));  // outside the try: its errors are not the tool's
    if (is_uncatchable(err)) std::rethrow_exception(err);
    co_return make_dispatch_result(ToolReturn(backend::DispatchResult(exception_failure(err))));
}

// A sandbox-scoped call: opens the session's sandbox lazily, then takes the sandbox's
// lane (inside the session's lane the caller holds).
asio::awaitable<ToolDispatchResult> sandbox_call(rath::async::Runtime& rt, FlowToolPtr t, Session s, json::object a,
                                                 std::string base) {
    if (s.sandbox_backend() && (!s.sandbox() || s.sandbox()->closed())) {
        try {
            (void)co_await s.async_require_sandbox();
        } catch (...) {
            auto e = std::current_exception();
            if (is_uncatchable(e)) throw;  // otherwise the tool reports the open failure itself
        }
    }
    auto sb = s.sandbox();
    if (!sb || sb->closed()) co_return co_await guarded_call(std::move(t), std::move(s), std::move(a));
    std::string inner = base + "\x1fsandbox:" + std::string(sb->backend_name()) + ":" + sb->handle();
    auto call = guarded_call(std::move(t), std::move(s), std::move(a));
    co_return co_await rt.strands().async_run(std::move(inner), std::move(call));
}

}  // namespace

// Not a coroutine: the policy check, the resource key and the place in the lane all
// happen when this is *called*, so calls issued in order run in that order.
asio::awaitable<ToolDispatchResult> async_dispatch_flow_tool(Session session_in, FlowToolPtr tool, json::object arguments,
                                                             rath::async::Runtime* runtime) {
    auto& rt = runtime ? *runtime : rath::async::Runtime::default_runtime();
    // The tool reads its session through a dispatch view: never waiting for the loop
    // that is waiting for it (session.md §2.8), on whatever thread the body runs.
    Session session = rath::detail::SessionAccess::dispatch_view(session_in);
    json::object args = std::move(arguments);  // by value: already the tool's own copy

    // 1. Policy: a denial never runs the tool and uses no budget.
    if (auto enforcer = tool_policy_enforcer(session)) {
        if (auto reason = enforcer->check_and_rewrite(tool->name(), args, host_workspace(session)))
            return rath::async::ready_awaitable(make_dispatch_result(
                ToolReturn(backend::DispatchResult(backend::ToolExecutionFailure{"tool_policy_denied", *reason, tool->name()}))));
    }

    // 2. Resource key (evaluated here only); a throwing key means the body does not run.
    ResourceKey key;
    try {
        key = tool->resource_key(args);
    } catch (...) {
        auto e = std::current_exception();
        if (is_uncatchable(e)) throw;
        return rath::async::ready_awaitable(make_dispatch_result(ToolReturn(backend::DispatchResult(exception_failure(e)))));
    }

    // 3. The lane (FIFO per lane, parallel across lanes), then the call. Every lane is
    //    one session's (see lane_key). Sandbox-scoped tools take the session's lane
    //    first (keeps one session's calls in call order even while its sandbox is being
    //    opened lazily), then the sandbox's lane (two sessions sharing a sandbox take
    //    turns). Always in that order: no cycles.
    const std::size_t suffix = session_part.size() + session.id().size();
    std::string base = base_lane(*tool, key, suffix);
    // Only a sandbox-scoped tool needs the frame that opens the sandbox and its lane
    // (and keeps `base` for it); the others' lane is `base` itself, grown in place.
    std::string outer;
    if (tool->sandbox_scoped()) {
        outer.reserve(base.size() + suffix);
        outer.append(base);
    } else {
        outer = std::move(base);
    }
    append_session_part(outer, session);
    auto op = tool->sandbox_scoped() ? sandbox_call(rt, tool, session, std::move(args), std::move(base))
                                     : guarded_call(tool, session, std::move(args));
    return rt.strands().async_run(std::move(outer), std::move(op));
}

ToolDispatchResult dispatch_flow_tool(const Session& session, FlowToolPtr tool, json::object arguments,
                                      rath::async::Runtime* runtime) {
    auto& rt = runtime ? *runtime : rath::async::Runtime::default_runtime();
    return rath::async::block_on(rt, async_dispatch_flow_tool(session, std::move(tool), std::move(arguments), runtime));
}

}  // namespace rath::tool
