#include "sandbox.hpp"

#include "lib/text/json_parse.hpp"

#include <boost/json.hpp>

namespace rath::sandbox_server {

namespace json = boost::json;

namespace {
json::object string_map(const std::map<std::string, std::string>& m) {
    json::object o;
    for (auto& [k, v] : m) o[k] = v;
    return o;
}
}  // namespace

std::optional<State> Sandbox::apply(Event e, std::string reason, std::string message) {
    std::lock_guard lk(mu);
    auto next = transition(record_.state, e);
    if (!next) return std::nullopt;
    record_.state = *next;
    record_.reason = std::move(reason);
    record_.message = std::move(message);
    record_.last_transition_at = Clock::now();
    return next;
}

json::object record_json(const Record& r, bool full) {
    json::object o;
    o["id"] = r.id;
    if (full) {
        json::object img;
        img["uri"] = r.image_uri;
        o["image"] = std::move(img);
    }
    json::object st;
    st["state"] = to_string(r.state);
    if (!r.reason.empty()) st["reason"] = r.reason;
    if (!r.message.empty()) st["message"] = r.message;
    st["lastTransitionAt"] = rfc3339(r.last_transition_at);
    o["status"] = std::move(st);
    o["metadata"] = string_map(r.metadata);
    json::array ep;
    for (auto& a : r.entrypoint) ep.emplace_back(a);
    o["entrypoint"] = std::move(ep);
    if (r.expires_at) o["expiresAt"] = rfc3339(*r.expires_at);
    o["createdAt"] = rfc3339(r.created_at);
    return o;
}

std::string record_to_disk(const Record& r) {
    json::object o = record_json(r, true);
    o["resourceLimits"] = string_map(r.resource_limits);
    o["rath"] = json::object{{"token", r.token}, {"workspace", r.workspace}, {"cgroup", r.cgroup}};
    return json::serialize(o) + "\n";
}

std::optional<Record> record_from_disk(std::string_view text) {
    auto v = rath::detail::parse_json(text);
    if (!v || !v->is_object()) return std::nullopt;
    const auto& o = v->as_object();
    auto str = [](const json::value* x) -> std::optional<std::string> {
        if (!x || !x->is_string()) return std::nullopt;
        return std::string(x->as_string());
    };
    auto map = [](const json::value* x) {
        std::map<std::string, std::string> m;
        if (x && x->is_object())
            for (auto& [k, val] : x->as_object())
                if (val.is_string()) m.emplace(std::string(k), std::string(val.as_string()));
        return m;
    };
    Record r;
    auto id = str(o.if_contains("id"));
    const json::value* status = o.if_contains("status");
    const json::value* rath = o.if_contains("rath");
    if (!id || !status || !status->is_object() || !rath || !rath->is_object()) return std::nullopt;
    r.id = *id;
    const auto& st = status->as_object();
    auto state = str(st.if_contains("state"));
    auto parsed_state = state ? parse_state(*state) : std::nullopt;
    if (!parsed_state) return std::nullopt;
    r.state = *parsed_state;
    r.reason = str(st.if_contains("reason")).value_or("");
    r.message = str(st.if_contains("message")).value_or("");
    auto created = parse_rfc3339(str(o.if_contains("createdAt")).value_or(""));
    auto last = parse_rfc3339(str(st.if_contains("lastTransitionAt")).value_or(""));
    if (!created) return std::nullopt;
    r.created_at = *created;
    r.last_transition_at = last.value_or(*created);
    if (auto e = str(o.if_contains("expiresAt"))) r.expires_at = parse_rfc3339(*e);
    if (auto* img = o.if_contains("image"); img && img->is_object()) r.image_uri = str(img->as_object().if_contains("uri")).value_or("");
    if (auto* ep = o.if_contains("entrypoint"); ep && ep->is_array())
        for (auto& a : ep->as_array())
            if (a.is_string()) r.entrypoint.emplace_back(a.as_string());
    r.metadata = map(o.if_contains("metadata"));
    r.resource_limits = map(o.if_contains("resourceLimits"));
    const auto& priv = rath->as_object();
    r.token = str(priv.if_contains("token")).value_or("");
    r.workspace = str(priv.if_contains("workspace")).value_or("");
    r.cgroup = str(priv.if_contains("cgroup")).value_or("");
    return r;
}

}  // namespace rath::sandbox_server
