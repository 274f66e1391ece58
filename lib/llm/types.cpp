// DTO helpers: usage sums, finish reasons, tool-argument parsing, stream folding.
#include <rath/llm/error.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/llm/usage.hpp>

#include "lib/llm/json_util.hpp"

namespace rath::llm {

std::optional<TokenUsage> add_usage(const std::optional<TokenUsage>& a, const std::optional<TokenUsage>& b) {
    if (!a) return b;
    if (!b) return a;
    return TokenUsage{.prompt_tokens = a->prompt_tokens + b->prompt_tokens,
                      .completion_tokens = a->completion_tokens + b->completion_tokens,
                      .total_tokens = a->total_tokens + b->total_tokens};
}

std::string_view to_string(FinishReason r) noexcept {
    switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::tool_calls: return "tool_calls";
    case FinishReason::content_filter: return "content_filter";
    case FinishReason::function_call: return "function_call";
    case FinishReason::error: return "error";
    }
    return "stop";
}

std::optional<FinishReason> finish_reason_from_string(std::string_view s) noexcept {
    if (s == "stop") return FinishReason::stop;
    if (s == "length") return FinishReason::length;
    if (s == "tool_calls") return FinishReason::tool_calls;
    if (s == "content_filter") return FinishReason::content_filter;
    if (s == "function_call") return FinishReason::function_call;
    if (s == "error") return FinishReason::error;
    return std::nullopt;
}

ParsedArguments parse_tool_arguments(std::string_view s) {
    if (s.empty()) return {};
    detail::LeasedParser lease;
    simdjson::dom::parser& parser = lease.get();
    simdjson::dom::element e;
    if (parser.parse(s.data(), s.size(), true).get(e) != simdjson::SUCCESS) return {.parse_error = true};
    if (!e.is_object()) return {.parse_error = true};
    return {.value = detail::to_boost_json(e).as_object()};
}

const ChatChoice& ChatResponse::primary_choice() const {
    if (choices.empty()) throw IndexError("ChatResponse has no choices");
    return choices.front();
}

void StreamAccumulator::add(const StreamDelta& d) {
    ++count_;
    if (d.content_delta && !d.content_delta->empty()) {
        text_ += *d.content_delta;
        has_text_ = true;
    }
    if (d.reasoning_delta && !d.reasoning_delta->empty()) {
        reasoning_ += *d.reasoning_delta;
        has_reasoning_ = true;
    }
    if (d.is_tool_fragment()) {
        const std::string id = d.tool_call_id.value_or("");
        int idx;
        if (d.tool_call_index) {
            idx = *d.tool_call_index;
        } else if (!last_bucket_) {
            idx = 0;
        } else {
            // No index: continue the previous call unless a different id starts a new one.
            idx = *last_bucket_;
            const std::string& cur = buckets_[idx].id;
            if (!id.empty() && !cur.empty() && id != cur) idx = buckets_.rbegin()->first + 1;
        }
        Bucket& b = buckets_[idx];
        if (!id.empty()) b.id = id;
        if (d.tool_call_name_delta) b.name += *d.tool_call_name_delta;
        if (d.tool_call_args_delta) b.arguments += *d.tool_call_args_delta;
        last_bucket_ = idx;
    }
    if (d.finish_reason) finish_ = d.finish_reason;
    if (d.usage) usage_ = d.usage;
}

ChatResponse StreamAccumulator::result() const {
    ChatChoice choice;
    choice.index = 0;
    if (has_text_) choice.message.content = text_;
    if (has_reasoning_) choice.message.reasoning_content = reasoning_;
    if (!buckets_.empty()) {
        std::vector<ToolCallPart> calls;
        for (const auto& [idx, b] : buckets_) {
            ToolCallPart p;
            p.id = b.id;
            p.function.name = b.name;
            p.function.arguments = b.arguments;
            auto parsed = parse_tool_arguments(b.arguments);
            p.function.arguments_parsed = std::move(parsed.value);
            p.function.arguments_parse_error = parsed.parse_error;
            calls.push_back(std::move(p));
        }
        choice.message.tool_calls = std::move(calls);
    }
    if (failed_)
        choice.finish_reason = FinishReason::error;
    else if (finish_)
        choice.finish_reason = *finish_;
    else
        choice.finish_reason = buckets_.empty() ? FinishReason::stop : FinishReason::tool_calls;
    ChatResponse r;
    r.model = model_;
    r.usage = usage_;
    r.choices.push_back(std::move(choice));
    return r;
}

}  // namespace rath::llm
