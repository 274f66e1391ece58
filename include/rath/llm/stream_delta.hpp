#pragma once
// One streamed event. Every field is independent and optional.
#include <rath/llm/response.hpp>
#include <rath/llm/usage.hpp>
#include <rath/tool/tool_event.hpp>

#include <optional>
#include <string>

namespace rath::llm {

struct StreamDelta {
    std::optional<std::string> content_delta{};    // never emitted empty
    std::optional<std::string> reasoning_delta{};  // reasoning_content / reasoning / thinking text
    std::optional<int> tool_call_index{};          // which tool call the next three extend
    std::optional<std::string> tool_call_id{};
    std::optional<std::string> tool_call_name_delta{};
    std::optional<std::string> tool_call_args_delta{};
    std::optional<FinishReason> finish_reason{};
    std::optional<TokenUsage> usage{};
    // Not the model's: what a tool of the run reported while it ran (progress, a log
    // line; rath/tool/tool_event.hpp). Set alone, never with the fields above.
    std::optional<tool::ToolEvent> tool_event{};

    [[nodiscard]] bool is_tool_fragment() const noexcept {
        return tool_call_index || tool_call_id || tool_call_name_delta || tool_call_args_delta;
    }
};

}  // namespace rath::llm
