#pragma once
// SamplingOptions: the fields of a chat request that shape the answer (llm.md §3), set
// on a Provider as defaults and on a ChatRequest per call. Unset fields are omitted from
// the wire body.
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

struct SamplingOptions {
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

    bool operator==(const SamplingOptions&) const = default;

    // Every unset field takes `defaults`' value; extra_create_args takes the keys of
    // `defaults` it lacks (provider_into_chat_request, session.md §2.3).
    void fill_unset_from(const SamplingOptions& defaults);
    // Every field set in `overrides` replaces this one's; each extra_create_args key of
    // `overrides` replaces or joins this one's.
    void take_set_from(const SamplingOptions& overrides);
};

}  // namespace rath::llm
