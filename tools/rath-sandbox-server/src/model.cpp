#include "model.hpp"

#include "lib/text/json_parse.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <ctime>
#include <regex>
#include <set>

namespace rath::sandbox_server {

namespace json = boost::json;

namespace {

[[noreturn]] void bad(const std::string& message, const char* code = codes::invalid_parameter) {
    throw ApiError(400, code, message);
}

bool dns_label(std::string_view s) {
    if (s.empty() || s.size() > 63) return false;
    auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!ok(s.front()) || !ok(s.back())) return false;
    for (char c : s)
        if (!ok(c) && c != '-') return false;
    return true;
}

std::map<std::string, std::string> string_map(const json::value* v, const char* field) {
    std::map<std::string, std::string> out;
    if (!v || v->is_null()) return out;
    if (!v->is_object()) bad(std::string(field) + " must be an object of strings");
    for (auto& [k, x] : v->as_object()) {
        if (!x.is_string()) bad(std::string(field) + "." + std::string(k) + " must be a string");
        out.emplace(std::string(k), std::string(x.as_string()));
    }
    return out;
}

const json::value* member(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &it->value();
}

bool relative_without_dotdot(std::string_view p) {
    if (p.empty() || p.front() == '/') return false;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string_view::npos) j = p.size();
        if (p.substr(i, j - i) == "..") return false;
        i = j + 1;
    }
    return true;
}

Volume parse_volume(const json::value& v, std::size_t index) {
    const std::string where = "volumes[" + std::to_string(index) + "]";
    if (!v.is_object()) bad(where + " must be an object", codes::invalid_volume_backend);
    const auto& o = v.as_object();
    Volume out;
    auto* name = member(o, "name");
    if (!name || !name->is_string() || !dns_label(name->as_string()))
        bad(where + ".name must be a DNS label (lowercase letters, digits and '-', at most 63 characters)",
            codes::invalid_volume_name);
    out.name = std::string(name->as_string());
    auto* mount = member(o, "mountPath");
    if (!mount || !mount->is_string() || mount->as_string().empty() || mount->as_string()[0] != '/')
        bad(where + ".mountPath must be an absolute path", codes::invalid_mount_path);
    out.mount_path = std::string(mount->as_string());
    if (out.mount_path == "/" || out.mount_path.find("/../") != std::string::npos ||
        out.mount_path.ends_with("/.."))
        bad(where + ".mountPath must not be / or contain '..'", codes::invalid_mount_path);
    if (auto* ro = member(o, "readOnly"); ro && !ro->is_null()) {
        if (!ro->is_bool()) bad(where + ".readOnly must be a boolean");
        out.read_only = ro->as_bool();
    }
    if (auto* sp = member(o, "subPath"); sp && !sp->is_null()) {
        if (!sp->is_string() || !relative_without_dotdot(sp->as_string()))
            bad(where + ".subPath must be a relative path without '..'", codes::invalid_sub_path);
        out.sub_path = std::string(sp->as_string());
    }
    int backends = 0;
    for (const char* b : {"host", "pvc", "ossfs"})
        if (auto* x = member(o, b); x && !x->is_null()) ++backends;
    if (backends != 1)
        bad(where + " must specify exactly one backend (host, pvc, ossfs)", codes::invalid_volume_backend);
    auto* host = member(o, "host");
    if (!host || host->is_null())
        bad(where + ": only the 'host' volume backend is supported by rath-sandbox-server",
            codes::unsupported_volume_backend);
    const json::value* path = host->is_object() ? member(host->as_object(), "path") : nullptr;
    if (!path || !path->is_string() || path->as_string().empty() || path->as_string()[0] != '/')
        bad(where + ".host.path must be an absolute path", codes::invalid_host_path);
    out.host_path = std::string(path->as_string());
    return out;
}

}  // namespace

std::optional<double> parse_cpu(std::string_view s) {
    if (s.empty()) return std::nullopt;
    double scale = 1;
    if (s.back() == 'm') {
        scale = 1e-3;
        s.remove_suffix(1);
    }
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v <= 0) return std::nullopt;
    return v * scale;
}

std::optional<std::uint64_t> parse_bytes(std::string_view s) {
    static const std::pair<std::string_view, double> suffixes[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"k", 1e3},     {"K", 1e3},        {"M", 1e6},           {"G", 1e9},   {"T", 1e12}};
    double scale = 1;
    for (auto& [suf, mul] : suffixes) {
        if (s.size() > suf.size() && s.ends_with(suf)) {
            scale = mul;
            s.remove_suffix(suf.size());
            break;
        }
    }
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
    const double bytes = v * scale;
    if (bytes >= 1.8e19) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
}

CreateRequest parse_create_request(std::string_view body, const CreateLimits& limits) {
    rath::detail::JsonParseError perr;
    auto parsed = rath::detail::parse_json(body, &perr);
    if (!parsed) bad("request body is not valid JSON: " + perr.message);
    if (!parsed->is_object()) bad("request body must be a JSON object");
    const auto& o = parsed->as_object();
    CreateRequest r;

    if (auto* snap = member(o, "snapshotId"); snap && !snap->is_null())
        throw ApiError(400, codes::api_not_supported, "snapshots are not supported by rath-sandbox-server");
    if (auto* ext = member(o, "extensions"); ext && ext->is_object() && ext->as_object().contains("poolRef"))
        throw ApiError(400, codes::api_not_supported, "pools (extensions.poolRef) are not supported by rath-sandbox-server");
    auto* image = member(o, "image");
    if (!image || !image->is_object()) bad("image is required (an object with a uri)");
    auto* uri = member(image->as_object(), "uri");
    if (!uri || !uri->is_string() || uri->as_string().empty()) bad("image.uri is required");
    r.image_uri = std::string(uri->as_string());

    auto* ep = member(o, "entrypoint");
    if (!ep || !ep->is_array() || ep->as_array().empty()) bad("entrypoint is required (at least one element)");
    for (auto& x : ep->as_array()) {
        if (!x.is_string()) bad("entrypoint elements must be strings");
        r.entrypoint.emplace_back(x.as_string());
    }
    if (r.entrypoint.front().empty()) bad("entrypoint[0] must not be empty");

    if (auto* t = member(o, "timeout"); t && !t->is_null()) {
        std::int64_t secs = 0;
        if (t->is_int64())
            secs = t->as_int64();
        else if (t->is_uint64() && t->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
            secs = static_cast<std::int64_t>(t->as_uint64());
        else if (t->is_double() && std::floor(t->as_double()) == t->as_double() && std::fabs(t->as_double()) < 1e15)
            secs = static_cast<std::int64_t>(t->as_double());
        else
            bad("timeout must be an integer number of seconds");
        if (secs < limits.min_timeout_s || secs > limits.max_timeout_s)
            bad("timeout must be between " + std::to_string(limits.min_timeout_s) + " and " +
                std::to_string(limits.max_timeout_s) + " seconds, got " + std::to_string(secs));
        r.timeout_s = secs;
    }

    auto* rl = member(o, "resourceLimits");
    if (!rl || rl->is_null()) bad("resourceLimits is required");
    r.raw_limits = string_map(rl, "resourceLimits");
    for (auto& [k, v] : r.raw_limits) {
        if (k == "cpu") {
            r.limits.cpu = parse_cpu(v);
            if (!r.limits.cpu) bad("resourceLimits.cpu must be a positive quantity such as \"500m\" or \"2\", got \"" + v + "\"");
        } else if (k == "memory") {
            r.limits.memory = parse_bytes(v);
            if (!r.limits.memory || *r.limits.memory < (4u << 20))
                bad("resourceLimits.memory must be a quantity of at least 4Mi such as \"512Mi\", got \"" + v + "\"");
        } else if (k == "pids") {
            auto n = parse_bytes(v);
            if (!n || *n < 1) bad("resourceLimits.pids must be a positive integer, got \"" + v + "\"");
            r.limits.pids = n;
        } else if (k == "ephemeral-storage" || k == "disk") {
            r.limits.disk = parse_bytes(v);
            if (!r.limits.disk || *r.limits.disk < (1u << 20))
                bad("resourceLimits." + k + " must be a quantity of at least 1Mi, got \"" + v + "\"");
        } else {
            r.limits.ignored.push_back(k);
        }
    }

    for (auto& [k, v] : string_map(member(o, "env"), "env")) {
        if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
            v.find('\0') != std::string::npos)
            bad("env key '" + k + "' is not a valid variable name");
        r.env.emplace_back(k, v);
    }
    r.metadata = string_map(member(o, "metadata"), "metadata");
    for (auto& [k, v] : r.metadata) {
        if (k.starts_with("opensandbox.io/"))
            bad("metadata key '" + k + "' uses the reserved prefix opensandbox.io/", codes::invalid_metadata_label);
        if (k.empty()) bad("metadata keys must not be empty", codes::invalid_metadata_label);
    }
    r.extensions = string_map(member(o, "extensions"), "extensions");

    if (auto* np = member(o, "networkPolicy"); np && !np->is_null()) {
        if (!np->is_object()) bad("networkPolicy must be an object");
        const auto& p = np->as_object();
        std::string action = "deny";
        if (auto* d = member(p, "defaultAction"); d && !d->is_null()) {
            if (!d->is_string() || (d->as_string() != "allow" && d->as_string() != "deny"))
                bad("networkPolicy.defaultAction must be \"allow\" or \"deny\"");
            action = std::string(d->as_string());
        }
        // An empty policy object is allow-all (the spec's sidecar default).
        if (p.empty()) action = "allow";
        if (auto* eg = member(p, "egress"); eg && eg->is_array() && !eg->as_array().empty())
            throw ApiError(400, codes::api_not_supported,
                           "networkPolicy.egress rules per domain are not supported by rath-sandbox-server: use "
                           "defaultAction \"allow\" (host network) or \"deny\" (no network) without rules");
        r.network = action == "allow";
    }

    if (auto* vols = member(o, "volumes"); vols && !vols->is_null()) {
        if (!vols->is_array()) bad("volumes must be an array");
        std::set<std::string> names;
        std::size_t i = 0;
        for (auto& v : vols->as_array()) {
            r.volumes.push_back(parse_volume(v, i++));
            if (!names.insert(r.volumes.back().name).second)
                bad("duplicate volume name '" + r.volumes.back().name + "'", codes::duplicate_volume_name);
        }
    }
    if (auto* plat = member(o, "platform"); plat && plat->is_object()) {
        auto* os = member(plat->as_object(), "os");
        if (os && os->is_string() && os->as_string() != "linux")
            bad("platform.os '" + std::string(os->as_string()) + "' cannot be satisfied: this server runs linux");
    }
    return r;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            const int h = hex(s[i + 1]), l = hex(s[i + 2]);
            if (h >= 0 && l >= 0) {
                out.push_back(static_cast<char>(h * 16 + l));
                i += 2;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

std::map<std::string, std::string> parse_metadata_filter(std::string_view s) {
    std::map<std::string, std::string> out;
    std::size_t i = 0;
    while (i <= s.size()) {
        std::size_t j = s.find('&', i);
        if (j == std::string_view::npos) j = s.size();
        auto part = s.substr(i, j - i);
        if (!part.empty()) {
            auto eq = part.find('=');
            if (eq == std::string_view::npos)
                out[percent_decode(part)] = "";
            else
                out[percent_decode(part.substr(0, eq))] = percent_decode(part.substr(eq + 1));
        }
        i = j + 1;
    }
    return out;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
    int frac = static_cast<int>(((ms % 1000) + 1000) % 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
    return buf;
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s) {
    static const std::regex re(R"(^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$)");
    std::cmatch m;
    if (!std::regex_match(s.data(), s.data() + s.size(), m, re)) return std::nullopt;
    auto num = [&](int i) { return std::stoi(m[i].str()); };
    std::tm tm{};
    tm.tm_year = num(1) - 1900;
    tm.tm_mon = num(2) - 1;
    tm.tm_mday = num(3);
    tm.tm_hour = num(4);
    tm.tm_min = num(5);
    tm.tm_sec = num(6);
    if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return std::nullopt;
    std::int64_t secs = timegm(&tm);
    std::int64_t micros = 0;
    if (m[7].matched) {
        std::string f = m[7].str().substr(1);
        f.resize(6, '0');
        micros = std::stoll(f.substr(0, 6));
    }
    std::string zone = m[8].str();
    if (zone != "Z" && zone != "z") {
        int sign = zone[0] == '-' ? -1 : 1;
        std::string digits;
        for (char c : zone.substr(1))
            if (c != ':') digits.push_back(c);
        secs -= sign * (std::stoi(digits.substr(0, 2)) * 3600 + std::stoi(digits.substr(2, 2)) * 60);
    }
    return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::seconds(secs) + std::chrono::microseconds(micros)));
}

std::chrono::system_clock::time_point parse_renew_request(std::string_view body) {
    rath::detail::JsonParseError perr;
    auto parsed = rath::detail::parse_json(body, &perr);
    if (!parsed || !parsed->is_object()) bad("request body must be a JSON object with expiresAt", codes::invalid_expiration);
    auto* e = member(parsed->as_object(), "expiresAt");
    if (!e || !e->is_string()) bad("expiresAt is required (an RFC 3339 date-time)", codes::invalid_expiration);
    auto t = parse_rfc3339(e->as_string());
    if (!t) bad("expiresAt '" + std::string(e->as_string()) + "' is not an RFC 3339 date-time", codes::invalid_expiration);
    return *t;
}

std::string error_body(std::string_view code, std::string_view message) {
    json::object o;
    o["code"] = code;
    o["message"] = message;
    return json::serialize(o);
}

Page parse_page(std::optional<std::string_view> page, std::optional<std::string_view> page_size) {
    auto one = [](std::optional<std::string_view> v, std::size_t def, std::size_t cap, const char* name) {
        if (!v) return def;
        std::size_t n = 0;
        auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (v->empty() || ec != std::errc() || p != v->data() + v->size() || n < 1)
            bad(std::string(name) + " must be an integer >= 1");
        return std::min(n, cap);
    };
    return Page{one(page, 1, SIZE_MAX / 2, "page"), one(page_size, 20, 1000, "pageSize")};
}

}  // namespace rath::sandbox_server
