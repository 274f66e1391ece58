#pragma once
// LoopExecutor: how the agent loop completes a request and runs a tool (session.md
// §2.2). The default one calls the loop's chat client and the tool layer's dispatcher
// (tool/dispatch.hpp); tests and embedders substitute their own.
//
// Thread safety: the loop calls an executor from runtime threads, several sessions at
// once; an executor shared by loops must allow that. Cancellation: the awaitables are
// cancelled with the loop (its task's cancellation slot).
#include <rath/llm/message.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/session.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace rath {

class LoopExecutor {
public:
    virtual ~LoopExecutor();

    // Completes `request` into `out`. Both are borrowed until the awaitable completes.
    // Throwing fails the loop (its output's first read rethrows it).
    [[nodiscard]] boost::asio::awaitable<void> async_complete(const llm::ChatRequest& request, llm::ChatResponse& out) {
        return do_complete(request, out);
    }
    // The tool-result body of one call. The loop calls this for every call of a batch
    // before awaiting any, in call order: the default dispatch takes each call's place
    // in its resource lane then, so same-key calls run in call order and other keys in
    // parallel. A dispatch that throws becomes a tool_execution_exception row (a
    // cancellation aborts the loop).
    [[nodiscard]] boost::asio::awaitable<std::string> async_dispatch_tool(Session out, tool::FlowToolPtr tool,
                                                                          boost::json::object arguments) {
        return do_dispatch_tool(std::move(out), std::move(tool), std::move(arguments));
    }
    // The same, with the id the model gave the call (its tool_calls[].id): what the loop
    // calls. Default: do_dispatch_tool, without the id; an executor that keys its work by
    // call (rath-worker records each call) overrides do_dispatch_tool_call.
    [[nodiscard]] boost::asio::awaitable<std::string> async_dispatch_tool_call(Session out, std::string call_id,
                                                                               tool::FlowToolPtr tool,
                                                                               boost::json::object arguments) {
        return do_dispatch_tool_call(std::move(out), std::move(call_id), std::move(tool), std::move(arguments));
    }
    // Tool schemas to send; empty = the loop's tool set.
    virtual std::vector<llm::FunctionTool> tool_schemas() const { return {}; }

private:
    virtual boost::asio::awaitable<void> do_complete(const llm::ChatRequest& request, llm::ChatResponse& out) = 0;
    // Default: tool::async_dispatch_flow_tool's content, on the runtime of the calling
    // thread (the loop's).
    virtual boost::asio::awaitable<std::string> do_dispatch_tool(Session out, tool::FlowToolPtr tool,
                                                                 boost::json::object arguments);
    // Default: do_dispatch_tool (not a coroutine: the call's lane place is still taken
    // when the loop initiates it).
    virtual boost::asio::awaitable<std::string> do_dispatch_tool_call(Session out, std::string call_id,
                                                                      tool::FlowToolPtr tool,
                                                                      boost::json::object arguments) {
        (void)call_id;
        return do_dispatch_tool(std::move(out), std::move(tool), std::move(arguments));
    }
};

}  // namespace rath
