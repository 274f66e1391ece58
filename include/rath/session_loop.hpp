#pragma once
// The agent loop (session.md §2): the user session's rows plus, per round, one LLM
// call, one assistant row and one tool-result row per requested tool call, until the
// model stops or max_tool_rounds calls were made.
//
// run_session_loop returns at once with a *pending* output session: its id, lineage
// and sandbox are readable immediately; reading its transcript or usage waits for
// the loop (and rethrows its error, once). async_run_session_loop is the same
// operation for coroutines and returns the finished session.
#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_delta.hpp>
#include <rath/session.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath {

namespace llm {
class ChatClient;
}

// The executor protocol (session.md §2.2): how the loop completes a request and runs
// a tool. The default uses the provider's chat client and the tool layer's dispatch;
// tests and embedders substitute their own.
class LoopExecutor {
public:
    virtual ~LoopExecutor() = default;
    virtual boost::asio::awaitable<llm::ChatResponse> async_complete(llm::ChatRequest request) = 0;
    // The loop calls this one: `request` is borrowed until the call returns (the loop
    // keeps its conversation). The default copies it into async_complete.
    virtual boost::asio::awaitable<llm::ChatResponse> async_complete_borrowed(const llm::ChatRequest& request) {
        return async_complete(request);
    }
    // What the loop actually awaits: the borrowed call with the response written into
    // `out`, the loop's own slot (so no frame below it holds a second response while
    // the session waits). The default assigns async_complete_borrowed's result.
    virtual boost::asio::awaitable<void> async_complete_into(const llm::ChatRequest& request, llm::ChatResponse& out);
    // The serialized tool-result body for one call (never throws for tool faults:
    // those become error payloads).
    virtual boost::asio::awaitable<std::string> async_dispatch_tool(Session out,
                                                                    std::shared_ptr<tool::FlowToolCall> tool,
                                                                    boost::json::object arguments);
    // Tool schemas to send; empty = the loop's merged tool table.
    virtual std::vector<llm::FunctionTool> tool_schemas() const { return {}; }
};

using StreamCallback = std::function<void(const llm::StreamDelta&)>;

struct LoopOptions {
    llm::Provider provider{};
    std::vector<std::shared_ptr<tool::FlowToolCall>> tools{};  // merged with the six built-ins
    std::shared_ptr<LoopExecutor> executor{};                  // custom executor (no on_event with it)
    std::shared_ptr<llm::ChatClient> client{};                 // chat client (default: chat_client_for(provider))
    int max_tool_rounds = 64;                                  // bounds LLM calls
    StreamCallback on_event{};                                 // streaming deltas, on a runtime thread
    bool persist = false;                                      // write through the JSONL writer
    std::optional<std::filesystem::path> persist_path{};       // explicit JSONL path (default <sessions>/<id>.jsonl)
    std::optional<std::string> sandbox_handle_id{};            // recorded in the persisted header
    bool lazy = true;                                          // false: wait before returning
    async::Runtime* runtime = nullptr;                         // default: Runtime::default_runtime()
    // Bounds how many loops started by run_session_loop run at once: the rest wait, in
    // call order, before they start (as small records: no coroutine frame, no request
    // yet). Null: no bound. The coroutine form (async_run_session_loop) is the caller's
    // own concurrency and does not take a place.
    std::shared_ptr<async::Admission> admission{};
};

// The sync facade: never blocks (unless lazy=false); chaining outputs into further
// loops does not block either — each loop waits for its inputs on the runtime.
Session run_session_loop(const Session& user, const Session& agent, LoopOptions options = {});
// The same with options shared, read-only, by many loops (an Agent passes one
// snapshot to all its sessions instead of a copy each).
Session run_session_loop(const Session& user, const Session& agent, std::shared_ptr<const LoopOptions> options);

// The coroutine form: returns the finished output session.
boost::asio::awaitable<Session> async_run_session_loop(Session user, Session agent, LoopOptions options = {});
boost::asio::awaitable<Session> async_run_session_loop(Session user, Session agent,
                                                       std::shared_ptr<const LoopOptions> options);

// Builds the request the loop sends for `messages` (session.md §2.3
// provider_into_chat_request): the provider's model and sampling fields, the tools,
// and tool_choice (the provider's, else `default_tool_choice`).
llm::ChatRequest make_chat_request(std::vector<llm::Message> messages, std::optional<llm::ToolList> tools,
                                   const llm::Provider& provider, std::optional<std::string> default_tool_choice);

}  // namespace rath
