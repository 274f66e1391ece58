#include <rath/session/format.hpp>

#include "lib/text/json_parse.hpp"
#include "lib/text/pyjson.hpp"
#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"

namespace rath {

using detail::preview;
using detail::pyrepr;

namespace {

constexpr std::size_t kTextMax = 256;
constexpr std::size_t kToolArgsMax = 160;

std::string member_str(const boost::json::object& p, std::string_view key) {
    auto it = p.find(key);
    return it == p.end() ? std::string() : detail::py_str(it->value());
}

bool is_blank(std::string_view s) {
    for (unsigned char c : s)
        if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')) return false;
    return true;
}

// "text=..." when the assistant content is present and not blank.
void assistant_text_part(const boost::json::object& p, std::size_t max, std::vector<std::string>& parts) {
    auto it = p.find("content");
    if (it == p.end() || it->value().is_null()) return;
    std::string c = detail::py_str(it->value());
    if (!is_blank(c)) parts.push_back("text=" + pyrepr(preview(c, max)));
}

const boost::json::array* tool_calls_of(const boost::json::object& p) {
    auto it = p.find("tool_calls");
    if (it == p.end() || !it->value().is_array() || it->value().get_array().empty()) return nullptr;
    return &it->value().get_array();
}

std::string call_field(const boost::json::value& call, std::string_view key, const char* missing) {
    if (!call.is_object()) return missing;
    auto fn = call.get_object().find("function");
    if (fn == call.get_object().end() || !fn->value().is_object()) return missing;
    auto v = fn->value().get_object().find(key);
    if (v == fn->value().get_object().end()) return missing;
    return detail::py_str(v->value());
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += sep;
        out += parts[i];
    }
    return out;
}

std::string prefix(std::size_t i, const ChunkRow& row) {
    return "[" + std::to_string(i) + "] " + std::string(to_string(row.kind())) + ": ";
}

std::string strip(std::string_view s) {
    auto ws = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return std::string(s);
}

}  // namespace

std::string format_chunk_row_repr(std::size_t i, const ChunkRow& row) {
    const auto& p = row.payload();
    switch (row.kind()) {
        case ChunkKind::system:
        case ChunkKind::user: return prefix(i, row) + pyrepr(preview(member_str(p, "content"), kTextMax));
        case ChunkKind::assistant: {
            std::vector<std::string> parts;
            assistant_text_part(p, kTextMax, parts);
            if (auto* calls = tool_calls_of(p)) {
                std::vector<std::string> names;
                for (const auto& c : *calls)
                    names.push_back(call_field(c, "name", "?") + "(" +
                                    pyrepr(preview(call_field(c, "arguments", ""), kToolArgsMax)) + ")");
                parts.push_back("tools=[" + join(names, ", ") + "]");
            }
            return prefix(i, row) + (parts.empty() ? std::string("(empty)") : join(parts, ", "));
        }
        case ChunkKind::tool_result:
            return prefix(i, row) + "name=" + pyrepr(member_str(p, "name")) + ", id=" +
                   pyrepr(member_str(p, "tool_call_id")) + ", body=" +
                   pyrepr(preview(member_str(p, "content"), kTextMax));
    }
    return prefix(i, row);
}

std::string format_chunk_row_brief(std::size_t i, const ChunkRow& row, std::size_t max) {
    const auto& p = row.payload();
    switch (row.kind()) {
        case ChunkKind::system:
        case ChunkKind::user: return prefix(i, row) + pyrepr(preview(member_str(p, "content"), max));
        case ChunkKind::assistant: {
            std::vector<std::string> parts;
            assistant_text_part(p, max, parts);
            if (auto* calls = tool_calls_of(p)) {
                std::vector<std::string> names;
                for (const auto& c : *calls) names.push_back(call_field(c, "name", "?"));
                parts.push_back("tools=[" + join(names, ", ") + "]");
            }
            return prefix(i, row) + (parts.empty() ? std::string("(empty)") : join(parts, ", "));
        }
        case ChunkKind::tool_result: {
            std::string body = strip(member_str(p, "content"));
            std::string shown;
            if (!body.empty()) {
                // JSON bodies are shown compactly with \uXXXX escapes resolved.
                if (auto v = detail::parse_json(body))
                    shown = preview(detail::pyjson(*v, {.compact = true}), max);
                else
                    shown = preview(body, max);
            }
            return prefix(i, row) + "name=" + pyrepr(member_str(p, "name")) + " body=" + shown;
        }
    }
    return prefix(i, row);
}

}  // namespace rath
