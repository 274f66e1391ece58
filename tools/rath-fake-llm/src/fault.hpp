#pragma once
// The faults the server can inject into one response, chosen per request by the
// `x-fake-fault` header or by a script response.
#include <cstdint>
#include <optional>
#include <string_view>

namespace rath::fake_llm::detail {

enum class Fault : std::uint8_t {
    none,
    rate_limit,     // "429": 429 with Retry-After
    server_error,   // "500"
    overloaded,     // "529": Anthropic's overloaded_error status
    reset,          // "reset": the connection is reset (RST) in the middle of the body
    truncate,       // "truncate": the body ends early (stream without its end, JSON cut in half)
    stream_error,   // "stream-error": an error event inside a 200 stream
    bad_tool_json,  // "bad-tool-json": tool call arguments that are not valid JSON
};

std::optional<Fault> parse_fault(std::string_view name);
std::string_view fault_name(Fault f);
inline constexpr std::string_view fault_names = "429, 500, 529, reset, truncate, stream-error, bad-tool-json";

}  // namespace rath::fake_llm::detail
