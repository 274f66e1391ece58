// Folding a delta sequence into one ChatResponse (stream_accumulator.hpp).
#include <rath/llm/stream_accumulator.hpp>

#include <utility>
#include <vector>

namespace rath::llm {

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
