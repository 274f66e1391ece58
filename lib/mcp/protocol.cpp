#include "lib/mcp/protocol.hpp"

#include <rath/mcp/error.hpp>
#include <rath/net/peer_bytes.hpp>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <array>

namespace rath::mcp {

namespace json = boost::json;

const std::vector<std::string>& requested_protocol_versions() {
    static const std::vector<std::string> versions{"2025-11-25", "2025-06-18"};
    return versions;
}

bool accepted_protocol_version(const std::string& version) {
    static constexpr std::array<std::string_view, 4> released{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
    return std::find(released.begin(), released.end(), version) != released.end();
}

}  // namespace rath::mcp

namespace rath::mcp::detail {

namespace json = boost::json;

std::string quote(std::string_view text) { return net::quote_peer_bytes(text); }

ClientProtocol::Outgoing ClientProtocol::request(std::string method, std::optional<json::value> params,
                                                bool progress_token) {
    jsonrpc::Id id{next_id_++};
    if (progress_token) {
        if (!params || !params->is_object()) params = json::object{};
        auto& meta = params->get_object()["_meta"];
        if (!meta.is_object()) meta = json::object{};
        meta.get_object()["progressToken"] = std::get<std::int64_t>(id);
    }
    std::string text = jsonrpc::serialize(jsonrpc::Request{id, method, std::move(params)});
    pending_.emplace(id, std::move(method));
    return Outgoing{std::move(id), std::move(text)};
}

std::string ClientProtocol::notification(std::string method, std::optional<json::value> params) {
    return jsonrpc::serialize(jsonrpc::Notification{std::move(method), std::move(params)});
}

void ClientProtocol::expect(jsonrpc::Id id, std::string method) { pending_.insert_or_assign(std::move(id), std::move(method)); }

bool ClientProtocol::forget(const jsonrpc::Id& id) { return pending_.erase(id) > 0; }

std::vector<jsonrpc::Id> ClientProtocol::pending_ids() const {
    std::vector<jsonrpc::Id> out;
    out.reserve(pending_.size());
    for (const auto& [id, m] : pending_) out.push_back(id);
    return out;
}

std::vector<ClientProtocol::Incoming> ClientProtocol::receive(std::string_view text) {
    std::vector<Incoming> out;
    auto parsed = jsonrpc::parse(text);
    for (auto& bad : parsed.invalid) out.emplace_back(Stray{bad.error.message + " in " + quote(text)});
    for (auto& m : parsed.messages) {
        if (auto* r = std::get_if<jsonrpc::Result>(&m)) {
            auto it = pending_.find(r->id);
            if (it == pending_.end()) {
                out.emplace_back(Stray{"an answer to id " + jsonrpc::id_text(r->id) + ", which has no request in flight"});
                continue;
            }
            out.emplace_back(Reply{r->id, std::move(it->second), std::move(r->result)});
            pending_.erase(it);
        } else if (auto* e = std::get_if<jsonrpc::ErrorResponse>(&m)) {
            if (!e->id) {
                // No id: the server could not read one of our messages. Nothing to fail.
                out.emplace_back(Stray{"an error without an id: " + std::to_string(e->error.code) + " " + e->error.message});
                continue;
            }
            auto it = pending_.find(*e->id);
            if (it == pending_.end()) {
                out.emplace_back(Stray{"an error for id " + jsonrpc::id_text(*e->id) + ", which has no request in flight: " +
                                       e->error.message});
                continue;
            }
            out.emplace_back(Reply{*e->id, std::move(it->second), std::move(e->error)});
            pending_.erase(it);
        } else if (auto* q = std::get_if<jsonrpc::Request>(&m)) {
            out.emplace_back(std::move(*q));
        } else {
            out.emplace_back(std::move(std::get<jsonrpc::Notification>(m)));
        }
    }
    return out;
}

namespace {

const json::object& as_object(const json::value& v, const char* what) {
    if (!v.is_object()) throw McpProtocolError(std::string(what) + " is not a JSON object");
    return v.get_object();
}

std::optional<std::string> opt_string(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    if (it == o.end() || !it->value().is_string()) return std::nullopt;
    return std::string(it->value().get_string());
}

json::object default_input_schema() { return json::object{{"type", "object"}, {"properties", json::object{}}}; }

}  // namespace

InitializeResult decode_initialize_result(const json::value& result) {
    const auto& o = as_object(result, "the initialize result");
    InitializeResult r;
    auto v = opt_string(o, "protocolVersion");
    if (!v) throw McpProtocolError("the initialize result has no protocolVersion string");
    r.protocol_version = std::move(*v);
    if (auto it = o.find("capabilities"); it != o.end() && it->value().is_object()) r.capabilities = it->value().get_object();
    if (auto it = o.find("serverInfo"); it != o.end() && it->value().is_object()) {
        const auto& si = it->value().get_object();
        r.server_info.name = opt_string(si, "name").value_or("");
        r.server_info.version = opt_string(si, "version").value_or("");
        r.server_info.title = opt_string(si, "title");
    }
    r.instructions = opt_string(o, "instructions");
    return r;
}

namespace {

bool is_type_name(std::string_view t) {
    static constexpr std::array<std::string_view, 7> names{"null", "boolean", "object", "array", "number", "string", "integer"};
    return std::find(names.begin(), names.end(), t) != names.end();
}

std::optional<std::string> schema_problem(const json::value& s, const std::string& where, int depth);

std::optional<std::string> schema_list_problem(const json::value& v, const std::string& where, int depth) {
    if (!v.is_array()) return where + " must be an array of schemas";
    std::size_t i = 0;
    for (const auto& e : v.get_array())
        if (auto p = schema_problem(e, where + "[" + std::to_string(i++) + "]", depth + 1)) return p;
    return std::nullopt;
}

std::optional<std::string> schema_problem(const json::value& s, const std::string& where, int depth) {
    if (depth > 64) return where + " nests deeper than 64 levels";
    if (s.is_bool()) return std::nullopt;
    if (!s.is_object()) return where + " must be a schema object or a boolean";
    const auto& o = s.get_object();
    if (auto it = o.find("type"); it != o.end()) {
        const auto& t = it->value();
        if (t.is_string()) {
            if (!is_type_name(t.get_string())) return where + ".type " + json::serialize(t) + " is not a JSON Schema type";
        } else if (t.is_array()) {
            for (const auto& e : t.get_array())
                if (!e.is_string() || !is_type_name(e.get_string()))
                    return where + ".type " + json::serialize(t) + " lists something that is not a JSON Schema type";
        } else {
            return where + ".type must be a string or an array of strings";
        }
    }
    if (auto it = o.find("properties"); it != o.end()) {
        if (!it->value().is_object()) return where + ".properties must be an object";
        for (const auto& kv : it->value().get_object())
            if (auto p = schema_problem(kv.value(), where + ".properties." + std::string(kv.key()), depth + 1)) return p;
    }
    if (auto it = o.find("required"); it != o.end()) {
        if (!it->value().is_array()) return where + ".required must be an array of strings";
        for (const auto& e : it->value().get_array())
            if (!e.is_string()) return where + ".required must be an array of strings";
    }
    if (auto it = o.find("items"); it != o.end()) {
        const auto& items = it->value();
        if (items.is_array()) {
            if (auto p = schema_list_problem(items, where + ".items", depth)) return p;
        } else if (auto p = schema_problem(items, where + ".items", depth + 1)) {
            return p;
        }
    }
    for (std::string_view k : {"anyOf", "oneOf", "allOf", "prefixItems"})
        if (auto it = o.find(k); it != o.end())
            if (auto p = schema_list_problem(it->value(), where + "." + std::string(k), depth)) return p;
    for (std::string_view k : {"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"})
        if (auto it = o.find(k); it != o.end())
            if (auto p = schema_problem(it->value(), where + "." + std::string(k), depth + 1)) return p;
    for (std::string_view k : {"$defs", "definitions", "patternProperties"})
        if (auto it = o.find(k); it != o.end()) {
            if (!it->value().is_object()) return where + "." + std::string(k) + " must be an object";
            for (const auto& kv : it->value().get_object())
                if (auto p = schema_problem(kv.value(), where + "." + std::string(k) + "." + std::string(kv.key()), depth + 1))
                    return p;
        }
    if (auto it = o.find("enum"); it != o.end() && !it->value().is_array()) return where + ".enum must be an array";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> input_schema_problem(const json::value& schema) {
    if (!schema.is_object()) {
        std::string shown = json::serialize(schema);
        if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
        return "inputSchema must be a JSON object, got " + shown;
    }
    const auto& o = schema.get_object();
    // MCP (server/tools.mdx "Tool"): inputSchema is a JSON Schema object whose type is "object".
    auto t = o.find("type");
    if (t == o.end() || !t->value().is_string() || t->value().get_string() != "object")
        return "inputSchema must have \"type\": \"object\"";
    return schema_problem(schema, "inputSchema", 0);
}

ToolsPage decode_tools_page(const json::value& result) {
    const auto& o = as_object(result, "the tools/list result");
    auto it = o.find("tools");
    if (it == o.end() || !it->value().is_array()) throw McpProtocolError("the tools/list result has no \"tools\" array");
    ToolsPage page;
    for (const auto& tv : it->value().get_array()) {
        if (!tv.is_object()) continue;  // nothing to call it by
        const auto& t = tv.get_object();
        auto name = opt_string(t, "name");
        if (!name || name->empty()) continue;
        ToolInfo info;
        info.name = std::move(*name);
        info.title = opt_string(t, "title");
        info.description = opt_string(t, "description");
        auto s = t.find("inputSchema");
        if (s == t.end() || s->value().is_null()) {
            info.input_schema = default_input_schema();
        } else if (auto problem = input_schema_problem(s->value())) {
            info.schema_error = *problem;
            info.input_schema = default_input_schema();
        } else {
            info.input_schema = s->value().get_object();
        }
        if (auto os = t.find("outputSchema"); os != t.end() && os->value().is_object()) info.output_schema = os->value().get_object();
        if (auto an = t.find("annotations"); an != t.end() && an->value().is_object()) info.annotations = an->value().get_object();
        page.tools.push_back(std::move(info));
    }
    page.next_cursor = opt_string(o, "nextCursor");
    return page;
}

ContentBlock decode_content_block(const json::value& block) {
    ContentBlock b;
    b.raw = block;
    if (!block.is_object()) {
        b.type = "unknown";
        return b;
    }
    const auto& o = block.get_object();
    b.type = opt_string(o, "type").value_or("unknown");
    if (b.type == "text") {
        b.text = opt_string(o, "text");
    } else if (b.type == "image" || b.type == "audio") {
        b.data = opt_string(o, "data");
        b.mime_type = opt_string(o, "mimeType");
    } else if (b.type == "resource") {
        if (auto r = o.find("resource"); r != o.end() && r->value().is_object()) {
            const auto& ro = r->value().get_object();
            b.uri = opt_string(ro, "uri");
            b.mime_type = opt_string(ro, "mimeType");
            b.text = opt_string(ro, "text");
            b.data = opt_string(ro, "blob");
        }
    } else if (b.type == "resource_link") {
        b.uri = opt_string(o, "uri");
        b.name = opt_string(o, "name");
        b.description = opt_string(o, "description");
        b.mime_type = opt_string(o, "mimeType");
    }
    if (auto a = o.find("annotations"); a != o.end() && a->value().is_object()) {
        const auto& ao = a->value().get_object();
        if (auto au = ao.find("audience"); au != ao.end() && au->value().is_array()) {
            std::vector<std::string> audience;
            for (const auto& e : au->value().get_array())
                if (e.is_string()) audience.emplace_back(e.get_string());
            b.audience = std::move(audience);
        }
    }
    return b;
}

CallToolResult decode_call_tool_result(const json::value& result) {
    const auto& o = as_object(result, "the tools/call result");
    CallToolResult r;
    if (auto it = o.find("content"); it != o.end() && !it->value().is_null()) {
        if (!it->value().is_array()) throw McpProtocolError("the tools/call result's \"content\" is not an array");
        for (const auto& b : it->value().get_array()) r.content.push_back(decode_content_block(b));
    }
    if (auto it = o.find("structuredContent"); it != o.end() && !it->value().is_null()) r.structured_content = it->value();
    if (auto it = o.find("isError"); it != o.end() && it->value().is_bool()) r.is_error = it->value().get_bool();
    return r;
}

json::object apply_schema_defaults(const json::object& schema, json::object content) {
    auto props = schema.find("properties");
    if (props == schema.end() || !props->value().is_object()) return content;
    for (const auto& kv : props->value().get_object()) {
        if (content.contains(kv.key()) || !kv.value().is_object()) continue;
        const auto& p = kv.value().get_object();
        if (auto d = p.find("default"); d != p.end()) content[kv.key()] = d->value();
    }
    return content;
}

}  // namespace rath::mcp::detail
