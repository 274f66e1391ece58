#pragma once
// The normalised (OpenAI Chat shaped) result of a completion.
#include <rath/llm/usage.hpp>

#include <rath/llm/raw_json.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::llm {

// `error` is not an OpenAI value: it marks a stream that ended with an in-stream
// error event (the partial response attached to the thrown ProviderError).
enum class FinishReason { stop, length, tool_calls, content_filter, function_call, error };

[[nodiscard]] std::string_view to_string(FinishReason r) noexcept;
// Maps a wire value; unknown strings give nullopt (callers pick their default).
[[nodiscard]] std::optional<FinishReason> finish_reason_from_string(std::string_view s) noexcept;
// The reasons that end a turn with an answer (stop, length, content_filter): the agent
// loop finishes on them, and one-shot calls (select, compress) require one.
[[nodiscard]] constexpr bool is_final_answer(FinishReason r) noexcept {
    return r == FinishReason::stop || r == FinishReason::length || r == FinishReason::content_filter;
}

struct ToolCallFunction {
    std::string name{};
    std::string arguments;  // exactly as received (may be invalid JSON)
    std::optional<boost::json::object> arguments_parsed{};
    bool arguments_parse_error = false;
};

struct ToolCallPart {
    std::string id{};
    std::string type = "function";
    ToolCallFunction function{};
};

struct ParsedArguments {
    std::optional<boost::json::object> value{};
    bool parse_error = false;
};

// "" -> (unset, false); invalid JSON or a non-object value -> (unset, true).
[[nodiscard]] ParsedArguments parse_tool_arguments(std::string_view s);

struct AssistantMessage {
    std::optional<std::string> content{};
    std::optional<std::string> refusal{};
    std::optional<std::string> reasoning_content{};  // reasoning_content / reasoning / thinking
    std::optional<std::vector<ToolCallPart>> tool_calls{};  // never an empty list
    std::optional<boost::json::object> function_call{};     // legacy OpenAI
    std::optional<std::vector<boost::json::object>> annotations{};
    static constexpr std::string_view role = "assistant";
};

struct ChatChoice {
    std::int64_t index = 0;
    FinishReason finish_reason = FinishReason::stop;
    AssistantMessage message{};
    std::optional<boost::json::object> logprobs{};
};

struct ChatResponse {
    std::string id{};
    std::vector<ChatChoice> choices{};
    std::int64_t created = 0;  // unix seconds, 0 when unknown
    std::string model{};
    std::optional<std::string> service_tier{};
    std::optional<std::string> system_fingerprint{};
    std::optional<TokenUsage> usage{};
    RawJson raw{};  // full vendor payload, decoded on first read
    static constexpr std::string_view object_type = "chat.completion";

    // choices[0]; throws rath::llm::IndexError ("ChatResponse has no choices") when empty.
    [[nodiscard]] const ChatChoice& primary_choice() const;
};

}  // namespace rath::llm
