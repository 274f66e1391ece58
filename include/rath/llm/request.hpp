#pragma once
// A provider-neutral chat request. Unset fields are omitted from the wire body.
#include <rath/llm/message.hpp>
#include <rath/llm/tool_list.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rath::llm {

// `stop` is either one string or a list of strings.
using StopSequences = std::variant<std::string, std::vector<std::string>>;

struct ChatRequest {
    std::vector<Message> messages{};
    std::optional<std::string> model{};  // unset: the client's default-model chain
    std::optional<ToolList> tools{};  // shared and immutable: copying a request is cheap
    std::optional<boost::json::value> tool_choice{};  // "auto" | "none" | "required" | object
    std::optional<bool> parallel_tool_calls{};
    std::optional<boost::json::object> response_format{};
    std::optional<double> temperature{};
    std::optional<double> top_p{};
    std::optional<std::int64_t> max_completion_tokens{};
    std::optional<std::int64_t> max_tokens{};
    std::optional<StopSequences> stop{};
    std::optional<std::int64_t> n{};
    std::optional<std::int64_t> seed{};
    std::optional<double> frequency_penalty{};
    std::optional<double> presence_penalty{};
    std::optional<boost::json::object> logit_bias{};
    std::optional<bool> logprobs{};
    std::optional<std::int64_t> top_logprobs{};
    std::optional<std::string> reasoning_effort{};
    std::optional<std::string> verbosity{};
    std::optional<boost::json::object> metadata{};
    std::optional<std::string> user{};
    std::optional<bool> store{};
    std::optional<std::string> service_tier{};
    // Merged into the body last (wins over named fields). The keys extra_body,
    // extra_headers, extra_query and timeout are transport options, not body keys.
    boost::json::object extra_create_args{};
};

}  // namespace rath::llm
