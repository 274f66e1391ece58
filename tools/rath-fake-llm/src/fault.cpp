#include "tools/rath-fake-llm/src/fault.hpp"

namespace rath::fake_llm::detail {

std::optional<Fault> parse_fault(std::string_view name) {
    if (name == "429") return Fault::rate_limit;
    if (name == "500") return Fault::server_error;
    if (name == "529") return Fault::overloaded;
    if (name == "reset") return Fault::reset;
    if (name == "truncate") return Fault::truncate;
    if (name == "stream-error") return Fault::stream_error;
    if (name == "bad-tool-json") return Fault::bad_tool_json;
    if (name == "none" || name.empty()) return Fault::none;
    return std::nullopt;
}

std::string_view fault_name(Fault f) {
    switch (f) {
        case Fault::none: return "none";
        case Fault::rate_limit: return "429";
        case Fault::server_error: return "500";
        case Fault::overloaded: return "529";
        case Fault::reset: return "reset";
        case Fault::truncate: return "truncate";
        case Fault::stream_error: return "stream-error";
        case Fault::bad_tool_json: return "bad-tool-json";
    }
    return "none";
}

}  // namespace rath::fake_llm::detail
