// The completion result (response.hpp): finish reasons, tool-argument parsing, the
// primary choice.
#include <rath/llm/error.hpp>
#include <rath/llm/response.hpp>

#include "lib/llm/json_util.hpp"

namespace rath::llm {

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

}  // namespace rath::llm
