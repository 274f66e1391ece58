#include "render.hpp"

#include <rath/session/persistence/records.hpp>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <string_view>

namespace rath::cli {

namespace json = boost::json;

namespace {

// The text of a content value: a string as is, parts joined (non-text parts named by
// their type), anything else as compact JSON; "" for null or missing.
std::string content_text(const json::object& payload) {
    auto it = payload.find("content");
    if (it == payload.end() || it->value().is_null()) return {};
    const json::value& v = it->value();
    if (v.is_string()) return std::string(v.get_string());
    if (v.is_array()) {
        std::string out;
        for (const auto& part : v.get_array()) {
            if (!out.empty()) out += '\n';
            const auto* o = part.if_object();
            const auto* type = o ? o->if_contains("type") : nullptr;
            const auto* text = o ? o->if_contains("text") : nullptr;
            if (text && text->is_string())
                out += std::string(text->get_string());
            else if (type && type->is_string())
                out += "[" + std::string(type->get_string()) + "]";
            else
                out += json::serialize(part);
        }
        return out;
    }
    return json::serialize(v);
}

std::string string_field(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (!v) return {};
    if (v->is_string()) return std::string(v->get_string());
    return json::serialize(*v);
}

struct ToolCallView {
    std::string id, name, arguments;
};

std::vector<ToolCallView> tool_calls_of(const json::object& payload) {
    std::vector<ToolCallView> out;
    const auto* calls = payload.if_contains("tool_calls");
    if (!calls || !calls->is_array()) return out;
    for (const auto& c : calls->get_array()) {
        const auto* o = c.if_object();
        if (!o) continue;
        ToolCallView v;
        v.id = string_field(*o, "id");
        if (const auto* fn = o->if_contains("function"); fn && fn->is_object()) {
            v.name = string_field(fn->get_object(), "name");
            v.arguments = string_field(fn->get_object(), "arguments");
        }
        out.push_back(std::move(v));
    }
    return out;
}

std::string indent(std::string_view text, std::string_view prefix) {
    std::string out;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto nl = text.find('\n', start);
        auto line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        out += prefix;
        out += line;
        out += '\n';
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    return out;
}

// A Markdown code fence longer than any backtick run inside `text`.
std::string fence_for(std::string_view text) {
    std::size_t longest = 0, run = 0;
    for (char c : text) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

std::string fenced(std::string_view text, std::string_view lang = {}) {
    auto f = fence_for(text);
    std::string out = f + std::string(lang) + "\n" + std::string(text);
    if (out.back() != '\n') out += '\n';
    return out + f + "\n";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
    std::string out;
    for (const auto& s : v) {
        if (!out.empty()) out += sep;
        out += s;
    }
    return out;
}

json::object extras_object(const LineageExtras& extras) {
    json::object o;
    for (const auto& [k, v] : extras) o[k] = v;
    return o;
}

std::string lineage_text(const persistence::PersistedSessionHeader& h) {
    std::string out = h.lineage_operator + " (" + std::string(to_string(h.lineage_kind)) + ")";
    if (!h.parent_session_ids.empty()) out += ", parents " + join(h.parent_session_ids, ", ");
    return out;
}

}  // namespace

std::string usage_text(const std::optional<TokenUsage>& usage) {
    if (!usage) return "none reported";
    return "prompt " + std::to_string(usage->prompt_tokens) + ", completion " +
           std::to_string(usage->completion_tokens) + ", total " + std::to_string(usage->total_tokens);
}

std::string render_header_text(const persistence::PersistedSession& s, const Style& style) {
    const auto& h = s.header;
    std::string out;
    out += style.bold("session " + h.id) + "  " + (s.closed ? style.green("closed") : style.yellow("partial")) + "\n";
    out += "  created  " + h.created_at + "\n";
    out += "  lineage  " + lineage_text(h) + "\n";
    if (!h.lineage_extras.empty()) out += "  extras   " + json::serialize(extras_object(h.lineage_extras)) + "\n";
    if (h.sandbox_backend) out += "  sandbox  " + *h.sandbox_backend + "\n";
    out += "  file     " + s.path.string() + "\n";
    out += "  rows     " + std::to_string(s.chunks.size()) + "\n";
    out += "  usage    " + usage_text(s.usage) + "\n";
    return out;
}

std::string render_rows_text(const ChunkTable& rows, std::size_t first, const Style& style) {
    std::string out;
    for (std::size_t i = first; i < rows.size(); ++i) {
        const ChunkRow& row = *rows[i];
        const auto& p = row.payload();
        const std::string index = style.dim("[" + std::to_string(i) + "]");
        switch (row.kind()) {
            case ChunkKind::system:
                out += index + " " + style.magenta("system") + "\n" + indent(content_text(p), "    ");
                break;
            case ChunkKind::user:
                out += index + " " + style.blue("user") + "\n" + indent(content_text(p), "    ");
                break;
            case ChunkKind::assistant: {
                out += index + " " + style.green("assistant") + "\n";
                if (auto text = content_text(p); !text.empty()) out += indent(text, "    ");
                for (const auto& c : tool_calls_of(p))
                    out += "    " + style.cyan("-> call " + c.name) + " " + style.dim("(id " + c.id + ")") + " " +
                           c.arguments + "\n";
                break;
            }
            case ChunkKind::tool_result:
                out += index + " " + style.cyan("tool_result " + string_field(p, "name")) + " " +
                       style.dim("(id " + string_field(p, "tool_call_id") + ")") + "\n" +
                       indent(content_text(p), "    ");
                break;
        }
    }
    return out;
}

std::string render_markdown(const persistence::PersistedSession& s) {
    const auto& h = s.header;
    std::string out = "# Session " + h.id + "\n\n";
    out += "- state: " + std::string(s.closed ? "closed" : "partial (no trailer)") + "\n";
    out += "- created: " + h.created_at + "\n";
    out += "- lineage: " + lineage_text(h) + "\n";
    if (!h.lineage_extras.empty()) out += "- lineage extras: `" + json::serialize(extras_object(h.lineage_extras)) + "`\n";
    out += "- usage: " + usage_text(s.usage) + "\n";
    for (std::size_t i = 0; i < s.chunks.size(); ++i) {
        const ChunkRow& row = *s.chunks[i];
        const auto& p = row.payload();
        const std::string n = "## [" + std::to_string(i) + "] ";
        switch (row.kind()) {
            case ChunkKind::system:
            case ChunkKind::user:
                out += "\n" + n + std::string(to_string(row.kind())) + "\n\n" + content_text(p) + "\n";
                break;
            case ChunkKind::assistant:
                out += "\n" + n + "assistant\n";
                if (auto text = content_text(p); !text.empty()) out += "\n" + text + "\n";
                for (const auto& c : tool_calls_of(p))
                    out += "\nTool call `" + c.name + "` (id `" + c.id + "`):\n\n" + fenced(c.arguments, "json");
                break;
            case ChunkKind::tool_result:
                out += "\n" + n + "tool result `" + string_field(p, "name") + "` (id `" +
                       string_field(p, "tool_call_id") + "`)\n\n" + fenced(content_text(p));
                break;
        }
    }
    return out;
}

std::string render_jsonl(const persistence::PersistedSession& s) {
    std::string out = persistence::record_line(
        persistence::make_header_record(s.to_session(), s.header.sandbox_handle_id, s.header.created_at));
    for (std::size_t i = 0; i < s.chunks.size(); ++i)
        out += persistence::record_line(persistence::make_chunk_record(i, *s.chunks[i]));
    if (s.trailer) out += persistence::record_line(*s.trailer);
    return out;
}

json::object session_to_json(const persistence::PersistedSession& s) {
    const auto& h = s.header;
    json::object o;
    o["id"] = h.id;
    o["path"] = s.path.string();
    o["closed"] = s.closed;
    o["created_at"] = h.created_at;
    json::array parents;
    for (const auto& p : h.parent_session_ids) parents.emplace_back(p);
    o["parent_session_ids"] = std::move(parents);
    o["lineage_operator"] = h.lineage_operator;
    o["lineage_kind"] = to_string(h.lineage_kind);
    o["lineage_extras"] = extras_object(h.lineage_extras);
    o["usage"] = token_usage_to_json(s.usage);
    json::array chunks;
    for (std::size_t i = 0; i < s.chunks.size(); ++i) {
        json::object c;
        c["index"] = i;
        c["kind"] = to_string(s.chunks[i]->kind());
        c["payload"] = s.chunks[i]->payload();
        chunks.emplace_back(std::move(c));
    }
    o["chunks"] = std::move(chunks);
    return o;
}

}  // namespace rath::cli
