#pragma once
// LoopStep: the agent loop's round algorithm (session.md §2.3–§2.7) as a state machine
// with no I/O. It owns the run's transcript rows, the conversation sent to the model,
// the usage and the budget; whoever drives it performs the actions it asks for (call
// the model, run tool calls, publish rows) and resumes it. run_session_loop is such a
// driver; tests drive it with hand-built responses.
//
//   LoopStep step(config);
//   for (;;) switch (step.resume()) {
//       case LoopAction::call_model:     send step.request(), answer into step.response(); break;
//       case LoopAction::dispatch_tools: set result of every call in step.tool_batch(); break;
//       case LoopAction::publish_rows:   make rows [step.published(), step.rows().size()) visible; break;
//       case LoopAction::finished:       done (step.truncated() says how).
//   }
//
// Thread safety: none; one driver resumes a step at a time. The calls of one
// dispatch_tools batch may be completed from several threads at once (each writes only
// its own ToolCall).
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/usage_meter.hpp>
#include <rath/session/chunk_table.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rath::tool {
class ToolTable;
}

namespace rath {

enum class LoopAction {
    call_model,      // send request(); write the answer into response()
    dispatch_tools,  // run every call of tool_batch(), setting its result
    publish_rows,    // rows [published(), rows().size()) are new; usage() may have changed
    finished,        // the run is over; truncated() tells whether the round cap ended it
};

// One tool call of a round, as the driver dispatches it.
struct LoopToolCall {
    std::size_t index = 0;                 // position in the round's tool calls
    const llm::ToolCallPart* part = nullptr;  // id, name and raw arguments, in the step's response
    tool::FlowToolPtr tool{};              // the table's tool (null: the call failed before dispatch)
    boost::json::object arguments{};       // the parsed arguments, the dispatcher's to take
    std::optional<std::string> result{};   // the TOOL_RESULT row's body
};

struct LoopStepConfig {
    ChunkTable seed{};                      // the user session's rows: the transcript starts with them
    const ChunkTable* agent_rows = nullptr;  // sent first in every request, never part of the transcript
    const tool::ToolTable* tools = nullptr;  // what the model's calls are looked up in (borrowed)
    llm::ToolList schemas{};                // the tools the request offers
    const llm::Provider* provider = nullptr;  // sampling fields and budget (borrowed)
    std::string_view session_id{};          // the output session's id, for the budget callback (borrowed)
    int max_tool_rounds = 64;               // bounds the model calls
};

// The request a round sends for `messages` (session.md §2.3 provider_into_chat_request):
// the provider's sampling fields, the tools, and tool_choice (the provider's, else
// `default_tool_choice`).
llm::ChatRequest make_chat_request(std::vector<llm::Message> messages, std::optional<llm::ToolList> tools,
                                   const llm::Provider& provider, std::optional<std::string> default_tool_choice);

class LoopStep {
public:
    // Builds the first request (the agent rows, then the seed rows as messages; the
    // provider's sampling fields; tool_choice "auto" unless the provider sets one).
    // Throws SessionError for a row that cannot become a message.
    explicit LoopStep(LoopStepConfig config);
    LoopStep(const LoopStep&) = delete;
    LoopStep& operator=(const LoopStep&) = delete;

    // Advances to the next action, given that the previous one was performed. Throws
    // what the budget callback throws (the response's usage is then counted, its row
    // not appended) and llm::IndexError for a response without choices.
    LoopAction resume();

    // call_model: the round's request (valid until the next resume()) and the slot its
    // answer goes into.
    [[nodiscard]] const llm::ChatRequest& request() const noexcept { return request_; }
    [[nodiscard]] llm::ChatResponse& response() noexcept { return response_; }

    // dispatch_tools: the calls to run now. They may run concurrently; a call that is
    // not parallel-safe always comes alone (session.md §2.4: a full barrier within the
    // round). Calls with equal resource keys are ordered by the dispatcher's lanes.
    [[nodiscard]] std::span<LoopToolCall> tool_batch() noexcept { return {calls_.data() + batch_begin_, batch_end_ - batch_begin_}; }

    // publish_rows and afterwards: the transcript so far, and how much of it was
    // published before this action.
    [[nodiscard]] const ChunkTable& rows() const noexcept { return rows_; }
    [[nodiscard]] std::size_t published() const noexcept { return published_; }
    [[nodiscard]] const std::optional<llm::TokenUsage>& usage() const noexcept { return meter_.cumulative(); }

    // finished: true when max_tool_rounds model calls were made without a final answer.
    [[nodiscard]] bool truncated() const noexcept { return truncated_; }
    [[nodiscard]] int rounds() const noexcept { return rounds_; }

private:
    enum class Stage { start, awaiting_model, awaiting_assistant_publish, awaiting_tools, awaiting_results_publish, done };

    LoopAction start_round();
    LoopAction after_model();
    LoopAction next_batch();
    LoopAction after_tools();
    LoopAction publish(ChunkRowPtr row);
    void classify_calls();

    LoopStepConfig config_;
    Stage stage_ = Stage::start;
    ChunkTable rows_;
    std::size_t published_ = 0;
    llm::ChatRequest request_;
    llm::ChatResponse response_;
    llm::UsageMeter meter_;
    std::vector<LoopToolCall> calls_;
    std::size_t batch_begin_ = 0;
    std::size_t batch_end_ = 0;
    int rounds_ = 0;
    bool final_answer_ = false;
    bool truncated_ = false;
};

}  // namespace rath
