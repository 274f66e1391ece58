#include "lib/memory/extract.hpp"

#include <rath/memory/uri.hpp>

#include <cctype>

#include "lib/text/json_parse.hpp"
#include "lib/text/pystr.hpp"

namespace rath::memory::detail {

std::string_view extraction_system_prompt() noexcept {
    return "You are a memory extractor. From the conversation below, extract durable\n"
           "facts about the user that would be useful to remember in future sessions\n"
           "(preferences, profile, recurring projects). Skip transient task context.\n"
           "\n"
           "Return STRICT JSON: an array of objects with two string keys:\n"
           "- \"uri\": a memory://user/memories/extracted/<slug> URI\n"
           "- \"content\": one-sentence English memo\n"
           "\n"
           "If no durable facts are present, return [].\n";
}

std::string extraction_user_prompt(const std::vector<boost::json::object>& messages) {
    std::string out = "Conversation:\n";
    bool first = true;
    for (const auto& m : messages) {
        std::string role = "user";
        if (const auto* r = m.if_contains("role"); r && r->is_string()) role = std::string(r->as_string());
        std::string content;
        const auto* c = m.if_contains("content");
        if (c && !c->is_null()) {
            content = rath::detail::py_str(*c);
        } else if (const auto* parts = m.if_contains("parts"); parts && parts->is_array()) {
            bool f = true;
            for (const auto& p : parts->as_array()) {
                if (!f) content += " ";
                content += rath::detail::py_str(p);
                f = false;
            }
        }
        if (!first) out += "\n";
        out += "[" + role + "] " + content;
        first = false;
    }
    return out + "\n\nReturn the JSON array now.";
}

namespace {
std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> parse_extracted(std::string_view text) {
    std::string_view t = trim(text);
    if (t.starts_with("```")) {
        while (!t.empty() && t.front() == '`') t.remove_prefix(1);
        while (!t.empty() && t.back() == '`') t.remove_suffix(1);
        if (t.size() >= 4) {
            std::string head(t.substr(0, 4));
            for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (head == "json") t.remove_prefix(4);
        }
        t = trim(t);
    }
    auto parsed = rath::detail::parse_json(t);
    if (!parsed) {
        auto a = t.find('['), b = t.rfind(']');
        if (a != std::string_view::npos && b != std::string_view::npos && b > a)
            parsed = rath::detail::parse_json(t.substr(a, b - a + 1));
    }
    std::vector<std::pair<std::string, std::string>> out;
    if (!parsed || !parsed->is_array()) return out;
    for (const auto& item : parsed->as_array()) {
        if (!item.is_object()) continue;
        const auto* u = item.as_object().if_contains("uri");
        const auto* c = item.as_object().if_contains("content");
        if (!u || !c || !u->is_string() || !c->is_string()) continue;
        std::string_view uri = u->as_string();
        if (!is_memory_uri(uri)) continue;
        out.emplace_back(to_public_uri(uri), std::string(c->as_string()));
    }
    return out;
}

}  // namespace rath::memory::detail
