#pragma once
// Folds a delta sequence into one ChatResponse. Pure: no I/O, feed deltas in order.
//
// Rules: text and reasoning fragments concatenate; tool fragments go to buckets by
// `tool_call_index`; a fragment without an index joins the previous fragment's bucket
// unless it carries a different non-empty id, which opens the next bucket. A non-empty
// id replaces the bucket's id, name/argument fragments append. The last finish reason
// and the last usage win. Without a finish reason: tool_calls if any call, else stop.
// Not synchronized: one owner feeds it. Throws nothing but std::bad_alloc.
#include <rath/llm/response.hpp>
#include <rath/llm/stream_delta.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace rath::llm {

class StreamAccumulator {
public:
    explicit StreamAccumulator(std::string model = {}) : model_(std::move(model)) {}

    void add(const StreamDelta& d);
    // The stream ended with an error: the finish reason becomes `error`.
    void fail() noexcept { failed_ = true; }

    [[nodiscard]] std::size_t delta_count() const noexcept { return count_; }
    [[nodiscard]] ChatResponse result() const;

private:
    struct Bucket {
        std::string id{}, name{}, arguments{};
    };
    std::string model_{};
    std::string text_{};
    bool has_text_ = false;
    std::string reasoning_{};
    bool has_reasoning_ = false;
    std::map<int, Bucket> buckets_{};
    std::optional<int> last_bucket_{};
    std::optional<FinishReason> finish_{};
    std::optional<TokenUsage> usage_{};
    std::size_t count_ = 0;
    bool failed_ = false;
};

}  // namespace rath::llm
