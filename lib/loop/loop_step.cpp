// The agent loop's round algorithm (session.md §2.3–§2.7), with no I/O.
#include <rath/loop/loop_step.hpp>

#include <rath/llm/error.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/messages.hpp>
#include <rath/tool/serialize.hpp>
#include <rath/tool/tool_table.hpp>

#include "lib/text/pyrepr.hpp"

#include <utility>

namespace rath {

namespace {

constexpr std::size_t detail_cap = 2000;  // §2.4: raw arguments in the detail of invalid_tool_arguments

std::string truncated_arguments(const std::string& raw) {
    if (raw.size() <= detail_cap) return raw;
    return raw.substr(0, detail_cap) + "...(truncated)";
}

}  // namespace

llm::ChatRequest make_chat_request(std::vector<llm::Message> messages, std::optional<llm::ToolList> tools,
                                   const llm::Provider& provider, std::optional<std::string> default_tool_choice) {
    llm::ChatRequest req;
    req.messages = std::move(messages);
    req.tools = std::move(tools);
    provider.apply_to(req);
    if (!req.sampling.tool_choice && default_tool_choice)
        req.sampling.tool_choice = boost::json::value(*default_tool_choice);
    return req;
}

LoopStep::LoopStep(LoopStepConfig config)
    : config_(std::move(config)),
      rows_(config_.seed),
      meter_(config_.provider ? llm::UsageMeter(*config_.provider, config_.session_id) : llm::UsageMeter()) {
    // Built once per run: each round only appends the rows it produced.
    if (config_.provider)
        request_ = make_chat_request({}, config_.schemas, *config_.provider, "auto");
    else
        request_.tools = config_.schemas;
    const std::size_t head = config_.agent_rows ? config_.agent_rows->size() : 0;
    request_.messages.reserve(head + rows_.size() + 2);
    if (config_.agent_rows)
        for (std::size_t i = 0; i < head; ++i)
            request_.messages.push_back(chunk_row_to_message(*(*config_.agent_rows)[i], i));
    for (std::size_t i = 0; i < rows_.size(); ++i) request_.messages.push_back(chunk_row_to_message(*rows_[i], i));
}

LoopAction LoopStep::resume() {
    switch (stage_) {
        case Stage::start:
            // The seed rows are the transcript's first rows: published (and persisted)
            // before the first model call.
            if (!rows_.empty()) {
                stage_ = Stage::awaiting_results_publish;
                return LoopAction::publish_rows;
            }
            return start_round();
        case Stage::awaiting_model:
            return after_model();
        case Stage::awaiting_assistant_publish: {
            published_ = rows_.size();
            if (!calls_.empty()) return next_batch();
            if (final_answer_) {
                stage_ = Stage::done;
                return LoopAction::finished;
            }
            return start_round();  // §2.3: any other finish reason without tool calls loops again
        }
        case Stage::awaiting_tools:
            batch_begin_ = batch_end_;
            return next_batch();
        case Stage::awaiting_results_publish:
            published_ = rows_.size();
            calls_.clear();
            batch_begin_ = batch_end_ = 0;
            return start_round();
        case Stage::done:
            return LoopAction::finished;
    }
    return LoopAction::finished;
}

LoopAction LoopStep::start_round() {
    if (rounds_ >= config_.max_tool_rounds) {
        truncated_ = true;
        stage_ = Stage::done;
        return LoopAction::finished;
    }
    ++rounds_;
    response_ = llm::ChatResponse{};
    stage_ = Stage::awaiting_model;
    return LoopAction::call_model;
}

LoopAction LoopStep::after_model() {
    // §2.7: usage first (a budget callback that throws aborts the run with the usage
    // counted and the row not appended), then the choice (IndexError without one).
    meter_.add(response_.usage);
    const llm::ChatChoice& choice = response_.primary_choice();
    const llm::AssistantMessage& msg = choice.message;
    std::optional<std::string_view> content;
    if (msg.content) content = *msg.content;
    if (!msg.tool_calls || msg.tool_calls->empty()) {
        final_answer_ = llm::is_final_answer(choice.finish_reason);
        stage_ = Stage::awaiting_assistant_publish;
        return publish(assistant_turn_chunk_from({}, content));
    }
    std::vector<ToolCallFields> fields;  // borrowed: the row is the first copy of each call
    fields.reserve(msg.tool_calls->size());
    for (const auto& tc : *msg.tool_calls) fields.push_back({tc.id, tc.function.name, tc.function.arguments, tc.type});
    ChunkRowPtr row = assistant_turn_chunk_from(fields, content);
    classify_calls();
    stage_ = Stage::awaiting_assistant_publish;
    return publish(std::move(row));
}

// §2.4 phase A: invalid arguments (checked first), then unknown tools, get their result
// here; the rest wait for dispatch with their arguments moved out of the response.
void LoopStep::classify_calls() {
    auto& parts = *response_.choices.front().message.tool_calls;
    calls_.clear();
    calls_.reserve(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
        auto& part = parts[i];
        auto& fn = part.function;
        LoopToolCall& call = calls_.emplace_back();
        call.index = i;
        call.part = &part;
        if (!fn.arguments_parsed || fn.arguments_parse_error) {
            std::optional<std::string> detail;
            if (!fn.arguments.empty()) detail = truncated_arguments(fn.arguments);
            call.result = tool::failure_content(
                "invalid_tool_arguments", "tool " + detail::pyrepr(fn.name) + " returned non-JSON or unparseable arguments",
                std::move(detail));
            continue;
        }
        call.tool = config_.tools ? config_.tools->find(fn.name) : nullptr;
        if (!call.tool) {
            call.result = tool::failure_content("unknown_tool", "unknown tool " + detail::pyrepr(fn.name));
            continue;
        }
        call.arguments = std::move(*fn.arguments_parsed);
    }
    batch_begin_ = batch_end_ = 0;
}

// The next calls that may run together: a run of parallel-safe calls, or one call that
// is not parallel-safe (a full barrier: nothing else of the round overlaps it).
LoopAction LoopStep::next_batch() {
    std::size_t i = batch_begin_;
    while (i < calls_.size() && calls_[i].result) ++i;
    if (i == calls_.size()) return after_tools();
    std::size_t j = i + 1;
    if (calls_[i].tool->parallel_safe())
        while (j < calls_.size() && (calls_[j].result || calls_[j].tool->parallel_safe())) ++j;
    batch_begin_ = i;
    batch_end_ = j;
    stage_ = Stage::awaiting_tools;
    return LoopAction::dispatch_tools;
}

// §2.4 phase C: one row per call, in call order.
LoopAction LoopStep::after_tools() {
    for (auto& call : calls_) {
        std::string body = call.result ? std::move(*call.result)
                                       : tool::failure_content("internal_missing_result",
                                                               "tool result missing after dispatch");
        rows_ = rows_.append(tool_feedback_chunk(call.part->id, call.part->function.name, std::move(body)));
        request_.messages.push_back(chunk_row_to_message(*rows_[rows_.size() - 1], rows_.size() - 1));
    }
    stage_ = Stage::awaiting_results_publish;
    return LoopAction::publish_rows;
}

LoopAction LoopStep::publish(ChunkRowPtr row) {
    rows_ = rows_.append(std::move(row));  // a new table object per append (§2.8 identity)
    request_.messages.push_back(chunk_row_to_message(*rows_[rows_.size() - 1], rows_.size() - 1));
    return LoopAction::publish_rows;
}

}  // namespace rath
