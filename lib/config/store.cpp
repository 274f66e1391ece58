#include <rath/config/store.hpp>

#include <rath/log.hpp>

#include "lib/config/atomic_file.hpp"

#include <boost/json.hpp>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rath::config {

namespace fs = std::filesystem;
namespace json = boost::json;

// ---------------------------------------------------------------- serialisation

namespace {

void write_string(std::string& out, std::string_view s) { out += json::serialize(json::string(s)); }

void write_number(std::string& out, const json::value& v) {
    if (v.is_double()) {
        double d = v.as_double();
        char buf[64];
        auto res = std::to_chars(buf, buf + sizeof buf, d);
        std::string s(buf, res.ptr);
        if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // Python-style 1.0
        out += s;
    } else {
        out += json::serialize(v);
    }
}

void write_pretty(std::string& out, const json::value& v, int indent) {
    const std::string pad(std::size_t(indent + 2), ' ');
    const std::string end_pad(std::size_t(indent), ' ');
    if (v.is_object()) {
        const auto& o = v.as_object();
        if (o.empty()) {
            out += "{}";
            return;
        }
        out += "{\n";
        bool first = true;
        for (const auto& kv : o) {
            if (!first) out += ",\n";
            first = false;
            out += pad;
            write_string(out, kv.key());
            out += ": ";
            write_pretty(out, kv.value(), indent + 2);
        }
        out += "\n" + end_pad + "}";
    } else if (v.is_array()) {
        const auto& a = v.as_array();
        if (a.empty()) {
            out += "[]";
            return;
        }
        out += "[\n";
        bool first = true;
        for (const auto& x : a) {
            if (!first) out += ",\n";
            first = false;
            out += pad;
            write_pretty(out, x, indent + 2);
        }
        out += "\n" + end_pad + "]";
    } else if (v.is_number()) {
        write_number(out, v);
    } else {
        out += json::serialize(v);
    }
}

// ---------------------------------------------------------------- validation

struct Validator {
    std::string file;

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw ConfigError(file + " failed schema validation: " + where + ": " + what);
    }
    static std::string kind_of(const json::value& v) {
        switch (v.kind()) {
        case json::kind::null: return "null";
        case json::kind::bool_: return "bool";
        case json::kind::int64:
        case json::kind::uint64: return "int";
        case json::kind::double_: return "float";
        case json::kind::string: return "string";
        case json::kind::array: return "array";
        case json::kind::object: return "object";
        }
        return "value";
    }
    json::value opt_string(const json::object& o, const char* key, const std::string& where) const {
        auto* v = o.if_contains(key);
        if (!v || v->is_null()) return nullptr;
        if (!v->is_string()) fail(where + "." + key, "expected a string or null, got " + kind_of(*v));
        return *v;
    }
    json::value opt_number(const json::object& o, const char* key, const std::string& where) const {
        auto* v = o.if_contains(key);
        if (!v || v->is_null()) return nullptr;
        if (v->is_number()) return v->to_number<double>();
        if (v->is_string()) {  // lax mode: numeric strings are coerced
            std::string s(v->as_string());
            double d;
            auto r = std::from_chars(s.data(), s.data() + s.size(), d);
            if (r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(d)) return d;
        }
        fail(where + "." + key, "expected a number or null, got " + kind_of(*v));
    }
    json::value opt_int(const json::object& o, const char* key, const std::string& where) const {
        auto* v = o.if_contains(key);
        if (!v || v->is_null()) return nullptr;
        if (v->is_int64()) return v->as_int64();
        if (v->is_uint64() && v->as_uint64() <= std::uint64_t(INT64_MAX)) return std::int64_t(v->as_uint64());
        if (v->is_double() && std::floor(v->as_double()) == v->as_double() && std::fabs(v->as_double()) < 9e18)
            return std::int64_t(v->as_double());
        if (v->is_string()) {
            std::string s(v->as_string());
            std::int64_t i;
            auto r = std::from_chars(s.data(), s.data() + s.size(), i);
            if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return i;
        }
        fail(where + "." + key, "expected an integer or null, got " + kind_of(*v));
    }
    json::value literal(const json::object& o, const char* key, const std::string& where,
                        std::initializer_list<const char*> allowed, const char* dflt) const {
        auto* v = o.if_contains(key);
        if (!v) return json::string(dflt);
        if (v->is_string())
            for (const char* a : allowed)
                if (v->as_string() == a) return *v;
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "'" : ", '") + std::string(a) + "'";
        fail(where + "." + key, "expected one of [" + list + "], got " + json::serialize(*v));
    }
    const json::object& object_at(const json::value& v, const std::string& where) const {
        if (!v.is_object()) fail(where, "expected an object, got " + kind_of(v));
        return v.as_object();
    }
    static json::object empty;
    const json::object& section(const json::object& o, const char* key, const std::string& where) const {
        auto* v = o.if_contains(key);
        if (!v) return empty;
        return object_at(*v, where.empty() ? key : where + "." + key);
    }
    // Declared keys first (in `out`), then the unknown ones in original order.
    static void keep_unknown(json::object& out, const json::object& in) {
        for (const auto& kv : in)
            if (!out.contains(kv.key())) out[kv.key()] = kv.value();
    }
    template <class F>
    json::object entries(const json::object& sec, const char* key, const std::string& where, F&& one) const {
        json::object out;
        auto* v = sec.if_contains(key);
        if (!v) return out;
        const auto& m = object_at(*v, where + "." + key);
        for (const auto& kv : m) {
            const std::string w = where + "." + key + "." + std::string(kv.key());
            out[kv.key()] = one(object_at(kv.value(), w), w);
        }
        return out;
    }

    json::object llm(const json::object& in) const {
        const std::string w = "llm";
        json::object out;
        out["default_provider"] = opt_string(in, "default_provider", w);
        out["embedding_provider"] = opt_string(in, "embedding_provider", w);
        out["vlm_provider"] = opt_string(in, "vlm_provider", w);
        out["providers"] = entries(in, "providers", w, [&](const json::object& e, const std::string& ew) {
            json::object o;
            o["provider_kind"] = literal(e, "provider_kind", ew, {"openai", "anthropic", "litellm"}, "openai");
            o["model"] = opt_string(e, "model", ew);
            o["api_key"] = opt_string(e, "api_key", ew);
            o["base_url"] = opt_string(e, "base_url", ew);
            o["temperature"] = opt_number(e, "temperature", ew);
            o["max_tokens"] = opt_int(e, "max_tokens", ew);
            // Written only when present: files without it keep their shape.
            if (auto* r = e.if_contains("record"); r && !r->is_null()) {
                if (!r->is_bool()) fail(ew + ".record", "expected true, false or null, got " + kind_of(*r));
                o["record"] = *r;
            }
            keep_unknown(o, e);
            return o;
        });
        keep_unknown(out, in);
        return out;
    }
    json::object mcp(const json::object& in) const {
        const std::string w = "mcp";
        json::object out;
        json::array enabled;
        if (auto* v = in.if_contains("default_enabled")) {
            if (!v->is_array()) fail(w + ".default_enabled", "expected a list of strings, got " + kind_of(*v));
            for (const auto& x : v->as_array()) {
                if (!x.is_string()) fail(w + ".default_enabled", "expected a list of strings, found " + kind_of(x));
                enabled.push_back(x);
            }
        }
        out["default_enabled"] = std::move(enabled);
        out["servers"] = entries(in, "servers", w, [&](const json::object& e, const std::string& ew) {
            json::object o;
            auto* cmd = e.if_contains("command");
            if (!cmd) fail(ew + ".command", "field required");
            if (!cmd->is_array()) fail(ew + ".command", "expected a list of strings, got " + kind_of(*cmd));
            for (const auto& x : cmd->as_array())
                if (!x.is_string()) fail(ew + ".command", "expected a list of strings, found " + kind_of(x));
            o["command"] = *cmd;
            json::object env;
            if (auto* ev = e.if_contains("env")) {
                const auto& eo = object_at(*ev, ew + ".env");
                for (const auto& kv : eo) {
                    if (!kv.value().is_string())
                        fail(ew + ".env." + std::string(kv.key()), "expected a string, got " + kind_of(kv.value()));
                    env[kv.key()] = kv.value();
                }
            }
            o["env"] = std::move(env);
            keep_unknown(o, e);
            return o;
        });
        keep_unknown(out, in);
        return out;
    }
    json::object memory(const json::object& in) const {
        const std::string w = "memory";
        json::object out;
        out["default_provider"] = opt_string(in, "default_provider", w);
        out["providers"] = entries(in, "providers", w, [&](const json::object& e, const std::string& ew) {
            json::object o;
            o["backend_kind"] = literal(e, "backend_kind", ew, {"local", "milvus"}, "local");
            o["path"] = opt_string(e, "path", ew);
            o["embedding_provider"] = opt_string(e, "embedding_provider", ew);
            o["chat_provider"] = opt_string(e, "chat_provider", ew);
            keep_unknown(o, e);
            return o;
        });
        keep_unknown(out, in);
        return out;
    }
    json::object backend(const json::object& in) const {
        const std::string w = "backend";
        json::object out;
        out["default_provider"] = opt_string(in, "default_provider", w);
        out["providers"] = entries(in, "providers", w, [&](const json::object& e, const std::string& ew) {
            json::object o;
            o["backend_kind"] = literal(e, "backend_kind", ew, {"local", "opensandbox"}, "opensandbox");
            o["domain"] = opt_string(e, "domain", ew);
            o["api_key"] = opt_string(e, "api_key", ew);
            json::object opts;
            if (auto* v = e.if_contains("options"); v && !v->is_null()) opts = object_at(*v, ew + ".options");
            o["options"] = std::move(opts);
            keep_unknown(o, e);
            return o;
        });
        keep_unknown(out, in);
        return out;
    }
    json::object document(const json::object& in) const {
        json::object out;
        json::value ver = opt_int(in, "version", "");
        out["version"] = ver.is_null() ? json::value(schema_version) : ver;
        out["llm"] = llm(section(in, "llm", ""));
        out["mcp"] = mcp(section(in, "mcp", ""));
        out["memory"] = memory(section(in, "memory", ""));
        out["backend"] = backend(section(in, "backend", ""));
        keep_unknown(out, in);
        return out;
    }
};
json::object Validator::empty;

std::optional<std::string> str_or_null(const json::value& v) {
    if (v.is_string()) return std::string(v.as_string());
    return std::nullopt;
}

std::string sorted_names(const json::object& m) {
    std::set<std::string> names;
    for (const auto& kv : m) names.insert(std::string(kv.key()));
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
    return "[" + s + "]";
}

config::LlmProviderEntry llm_entry(const json::object& e) {
    LlmProviderEntry out;
    out.provider_kind = std::string(e.at("provider_kind").as_string());
    out.model = str_or_null(e.at("model"));
    out.api_key = str_or_null(e.at("api_key"));
    out.base_url = str_or_null(e.at("base_url"));
    if (e.at("temperature").is_number()) out.temperature = e.at("temperature").to_number<double>();
    if (e.at("max_tokens").is_int64()) out.max_tokens = e.at("max_tokens").as_int64();
    if (auto* r = e.if_contains("record"); r && r->is_bool()) out.record = r->as_bool();
    return out;
}

json::object llm_entry_json(const LlmProviderEntry& e, const json::object* prev) {
    json::object o;
    o["provider_kind"] = e.provider_kind;
    o["model"] = e.model ? json::value(*e.model) : json::value(nullptr);
    o["api_key"] = e.api_key ? json::value(*e.api_key) : json::value(nullptr);
    o["base_url"] = e.base_url ? json::value(*e.base_url) : json::value(nullptr);
    o["temperature"] = e.temperature ? json::value(*e.temperature) : json::value(nullptr);
    o["max_tokens"] = e.max_tokens ? json::value(*e.max_tokens) : json::value(nullptr);
    if (e.record) o["record"] = *e.record;
    if (prev)
        for (const auto& kv : *prev)
            if (!o.contains(kv.key())) o[kv.key()] = kv.value();
    return o;
}

// ---------------------------------------------------------------- file helpers

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ConfigError(p.string() + " could not be read");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Stamp {
    std::int64_t mtime_ns = 0;
    std::int64_t size = 0;
    bool operator==(const Stamp&) const = default;
};

std::optional<Stamp> stamp_of(const fs::path& p) {
    struct stat st{};
    if (::stat(p.c_str(), &st) != 0) return std::nullopt;
    return Stamp{std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, std::int64_t(st.st_size)};
}

std::mutex& cache_mu() {
    static std::mutex m;
    return m;
}
std::map<std::string, std::pair<Stamp, std::shared_ptr<ConfigStore>>>& cache() {
    static std::map<std::string, std::pair<Stamp, std::shared_ptr<ConfigStore>>> c;
    return c;
}

void warn_permissions_once(const fs::path& p) {
    struct stat st{};
    if (::stat(p.c_str(), &st) != 0) return;
    if ((st.st_mode & 077) == 0) return;
    static std::mutex m;
    static std::set<std::string> warned;
    {
        std::lock_guard lk(m);
        if (!warned.insert(p.string()).second) return;
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", unsigned(st.st_mode & 0777));
    rath::log(LogLevel::warning, "rath.config",
              p.string() + " has permissions " + mode + " and may hold API keys readable by others; run: chmod 600 " +
                  p.string());
}

fs::path absolute_path(const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
    return ec ? fs::absolute(p) : r;
}

void amend_project_gitignore(const fs::path& root) {
    fs::path gi = root / ".gitignore";
    std::error_code ec;
    if (!fs::is_regular_file(gi, ec)) return;
    std::string text = read_file(gi);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        auto b = line.find_first_not_of(" \t\r");
        auto e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos) continue;
        std::string t = line.substr(b, e - b + 1);
        if (!t.empty() && t.back() == '/') t.pop_back();
        if (t == ".openrath") return;
    }
    std::ofstream out(gi, std::ios::binary | std::ios::app);
    if (!text.empty() && text.back() != '\n') out << "\n";
    out << ".openrath/\n";
}

// ---------------------------------------------------------------- credentials.json

constexpr std::string_view secret_sections[] = {"llm", "memory", "backend"};

json::object* providers_of(json::object& doc, std::string_view section) {
    auto* sec = doc.if_contains(section);
    if (!sec || !sec->is_object()) return nullptr;
    auto* providers = sec->as_object().if_contains("providers");
    return providers && providers->is_object() ? &providers->as_object() : nullptr;
}

bool has_key(const json::object& entry) {
    const auto* k = entry.if_contains("api_key");
    return k && k->is_string() && !k->as_string().empty();
}

// Fills entries without an inline key from the sidecar; true when some entry of
// config.json holds a key inline (the next save moves it out).
bool merge_credentials(json::object& doc, const fs::path& sidecar) {
    bool inline_keys = false;
    for (auto section : secret_sections)
        if (auto* providers = providers_of(doc, section))
            for (const auto& kv : *providers)
                if (kv.value().is_object() && has_key(kv.value().as_object())) inline_keys = true;
    std::error_code ec;
    if (!fs::exists(sidecar, ec)) return inline_keys;
    json::value side;
    try {
        std::string text;
        {
            std::ifstream in(sidecar, std::ios::binary);
            if (!in) throw std::runtime_error("could not be read");
            std::ostringstream ss;
            ss << in.rdbuf();
            text = ss.str();
        }
        side = json::parse(text);
        if (!side.is_object()) throw std::runtime_error("top level is not an object");
    } catch (const std::exception& e) {
        rath::log(LogLevel::warning, "rath.config",
                  sidecar.string() + " is ignored (" + e.what() + "); keys must come from config.json or the environment");
        return inline_keys;
    }
    for (auto section : secret_sections) {
        auto* providers = providers_of(doc, section);
        const auto* sec = side.as_object().if_contains(section);
        if (!providers || !sec || !sec->is_object()) continue;
        const auto* keys = sec->as_object().if_contains("providers");
        if (!keys || !keys->is_object()) continue;
        for (const auto& kv : keys->as_object()) {
            auto* entry = providers->if_contains(kv.key());
            if (!entry || !entry->is_object() || !kv.value().is_string()) continue;
            if (!has_key(entry->as_object())) entry->as_object()["api_key"] = kv.value();
        }
    }
    return inline_keys;
}

// Moves every non-empty api_key of the secret sections out of `doc` into the sidecar
// document it returns ({"<section>": {"providers": {"<name>": "<key>"}}, "version": 1});
// null when there is none.
json::value split_credentials(json::object& doc) {
    json::object side;
    for (auto section : secret_sections) {
        auto* providers = providers_of(doc, section);
        if (!providers) continue;
        json::object keys;
        for (auto& kv : *providers) {
            if (!kv.value().is_object()) continue;
            auto& entry = kv.value().as_object();
            if (!has_key(entry)) continue;
            keys[kv.key()] = entry["api_key"];
            // Declared fields keep their slot as null; an undeclared api_key goes away.
            if (section == "memory")
                entry.erase("api_key");
            else
                entry["api_key"] = nullptr;
        }
        if (!keys.empty()) side[section] = json::object{{"providers", std::move(keys)}};
    }
    if (side.empty()) return nullptr;
    side["version"] = schema_version;
    return side;
}

}  // namespace

fs::path credentials_path(const fs::path& config_path) { return config_path.parent_path() / "credentials.json"; }

namespace {

}  // namespace

// ---------------------------------------------------------------- public API

std::string dump_pretty(const json::value& v) {
    std::string out;
    write_pretty(out, v, 0);
    out += "\n";
    return out;
}

std::string default_config_text() { return dump_pretty(Validator{"<defaults>"}.document(json::object{})); }

ConfigStore::ConfigStore(fs::path path) : path_(absolute_path(path)) {
    Validator v{path_.string()};
    std::error_code ec;
    if (!fs::exists(path_, ec)) {
        doc_ = v.document(json::object{});
        return;
    }
    warn_permissions_once(path_);
    const std::string text = read_file(path_);
    json::stream_parser parser;
    boost::system::error_code jec;
    std::size_t n = parser.write(text.data(), text.size(), jec);
    if (!jec) parser.finish(jec);
    if (jec) {
        std::size_t off = std::min(n, text.size());
        std::size_t line = 1, col = 1;
        for (std::size_t i = 0; i < off; ++i) {
            if (text[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw ConfigError(path_.string() + " is not valid JSON (line " + std::to_string(line) + ", col " +
                          std::to_string(col) + "): " + jec.message());
    }
    json::value root = parser.release();
    if (!root.is_object())
        throw ConfigError(path_.string() + " top-level must be a JSON object, got " + Validator::kind_of(root));
    doc_ = v.document(root.as_object());
    from_file_ = true;
    warn_permissions_once(credentials_path(path_));
    migrate_inline_keys_ = merge_credentials(doc_, credentials_path(path_));
}

std::shared_ptr<ConfigStore> ConfigStore::load() { return load(resolve_config_path()); }

std::shared_ptr<ConfigStore> ConfigStore::load(const fs::path& p) {
    const fs::path path = absolute_path(p);
    const std::string key = path.string();
    auto st = stamp_of(path);
    if (st) {
        std::lock_guard lk(cache_mu());
        auto it = cache().find(key);
        if (it != cache().end() && it->second.first == *st) return it->second.second;
    }
    auto store = std::make_shared<ConfigStore>(path);
    if (auto after = stamp_of(path)) {
        std::lock_guard lk(cache_mu());
        cache()[key] = {*after, store};
    }
    return store;
}

void ConfigStore::clear_cache() {
    std::lock_guard lk(cache_mu());
    cache().clear();
}

json::object ConfigStore::document() const {
    std::lock_guard lk(mu_);
    return doc_;
}

void ConfigStore::set_document(json::object doc) {
    json::object v = Validator{path_.string()}.document(doc);
    std::lock_guard lk(mu_);
    doc_ = std::move(v);
}

std::optional<std::string> ConfigStore::default_llm_provider() const {
    std::lock_guard lk(mu_);
    return str_or_null(doc_.at("llm").at("default_provider"));
}
std::optional<std::string> ConfigStore::embedding_provider() const {
    std::lock_guard lk(mu_);
    return str_or_null(doc_.at("llm").at("embedding_provider"));
}
std::optional<std::string> ConfigStore::vlm_provider() const {
    std::lock_guard lk(mu_);
    return str_or_null(doc_.at("llm").at("vlm_provider"));
}

std::vector<std::string> ConfigStore::llm_provider_names() const {
    std::lock_guard lk(mu_);
    std::vector<std::string> out;
    for (const auto& kv : doc_.at("llm").at("providers").as_object()) out.emplace_back(kv.key());
    return out;
}

bool ConfigStore::has_llm_provider(std::string_view name) const {
    std::lock_guard lk(mu_);
    return doc_.at("llm").at("providers").as_object().contains(name);
}

LlmProviderEntry ConfigStore::get_llm_provider(std::optional<std::string_view> name) const {
    std::lock_guard lk(mu_);
    const auto& llm = doc_.at("llm").as_object();
    std::string n;
    if (name && !name->empty())
        n = std::string(*name);
    else if (auto d = str_or_null(llm.at("default_provider")))
        n = *d;
    else
        throw ConfigLookupError("no LLM provider name given and no llm.default_provider set in " + path_.string());
    const auto& providers = llm.at("providers").as_object();
    auto* e = providers.if_contains(n);
    if (!e)
        throw ConfigLookupError("LLM provider '" + n + "' not found in " + path_.string() +
                                "; available: " + sorted_names(providers));
    return llm_entry(e->as_object());
}

std::optional<std::pair<std::string, LlmProviderEntry>> ConfigStore::find_provider_by_kind(std::string_view kind) const {
    std::lock_guard lk(mu_);
    const auto& llm = doc_.at("llm").as_object();
    const auto& providers = llm.at("providers").as_object();
    if (auto d = str_or_null(llm.at("default_provider")))
        if (auto* e = providers.if_contains(*d); e && e->as_object().at("provider_kind").as_string() == kind)
            return std::pair{*d, llm_entry(e->as_object())};
    for (const auto& kv : providers)
        if (kv.value().as_object().at("provider_kind").as_string() == kind)
            return std::pair{std::string(kv.key()), llm_entry(kv.value().as_object())};
    return std::nullopt;
}

void ConfigStore::set_llm_provider(const std::string& name, const LlmProviderEntry& entry) {
    if (entry.provider_kind != "openai" && entry.provider_kind != "anthropic" && entry.provider_kind != "litellm")
        throw ConfigError(path_.string() + " failed schema validation: llm.providers." + name +
                          ".provider_kind: expected one of ['openai', 'anthropic', 'litellm'], got '" +
                          entry.provider_kind + "'");
    std::lock_guard lk(mu_);
    auto& providers = doc_["llm"].as_object()["providers"].as_object();
    const json::object* prev = nullptr;
    json::object prev_copy;
    if (auto* p = providers.if_contains(name)) {
        prev_copy = p->as_object();
        prev = &prev_copy;
    }
    providers[name] = llm_entry_json(entry, prev);
}

void ConfigStore::set_default_llm_provider(std::optional<std::string> name) {
    std::lock_guard lk(mu_);
    doc_["llm"].as_object()["default_provider"] = name ? json::value(*name) : json::value(nullptr);
}
void ConfigStore::set_embedding_provider(std::optional<std::string> name) {
    std::lock_guard lk(mu_);
    doc_["llm"].as_object()["embedding_provider"] = name ? json::value(*name) : json::value(nullptr);
}
void ConfigStore::set_vlm_provider(std::optional<std::string> name) {
    std::lock_guard lk(mu_);
    doc_["llm"].as_object()["vlm_provider"] = name ? json::value(*name) : json::value(nullptr);
}

MemoryProviderEntry ConfigStore::get_memory_provider(std::optional<std::string_view> name) const {
    std::lock_guard lk(mu_);
    const auto& mem = doc_.at("memory").as_object();
    std::string n;
    if (name && !name->empty())
        n = std::string(*name);
    else if (auto d = str_or_null(mem.at("default_provider")))
        n = *d;
    else
        throw ConfigLookupError("no memory provider name given and no memory.default_provider set in " + path_.string());
    const auto& providers = mem.at("providers").as_object();
    auto* e = providers.if_contains(n);
    if (!e)
        throw ConfigLookupError("memory provider '" + n + "' not found in " + path_.string() +
                                "; available: " + sorted_names(providers));
    const auto& o = e->as_object();
    MemoryProviderEntry out;
    out.backend_kind = std::string(o.at("backend_kind").as_string());
    out.path = str_or_null(o.at("path"));
    out.embedding_provider = str_or_null(o.at("embedding_provider"));
    out.chat_provider = str_or_null(o.at("chat_provider"));
    return out;
}

namespace {
McpServerEntry mcp_entry(const json::object& o) {
    McpServerEntry e;
    for (const auto& x : o.at("command").as_array()) e.command.emplace_back(x.as_string());
    for (const auto& kv : o.at("env").as_object()) e.env.emplace_back(std::string(kv.key()), std::string(kv.value().as_string()));
    return e;
}
}  // namespace

McpServerEntry ConfigStore::get_mcp_server(std::string_view name) const {
    std::lock_guard lk(mu_);
    const auto& servers = doc_.at("mcp").at("servers").as_object();
    auto* e = servers.if_contains(name);
    if (!e)
        throw ConfigLookupError("MCP server '" + std::string(name) + "' not found in " + path_.string() +
                                "; available: " + sorted_names(servers));
    return mcp_entry(e->as_object());
}

std::vector<std::pair<std::string, McpServerEntry>> ConfigStore::enabled_mcp_servers() const {
    std::vector<std::string> names;
    {
        std::lock_guard lk(mu_);
        for (const auto& x : doc_.at("mcp").at("default_enabled").as_array()) names.emplace_back(x.as_string());
    }
    std::vector<std::pair<std::string, McpServerEntry>> out;
    for (const auto& n : names) out.emplace_back(n, get_mcp_server(n));
    return out;
}

void ConfigStore::save() {
    const fs::path dir = path_.parent_path();
    fs::create_directories(dir);
    const fs::path gi = dir / ".gitignore";
    std::error_code ec;
    if (!fs::exists(gi, ec)) {
        std::ofstream out(gi, std::ios::binary);
        out << "*\n!.gitignore\n!config.json.example\n";
    }
    if (is_project_local(dir)) amend_project_gitignore(fs::current_path());

    {
        std::lock_guard lk(mu_);
        doc_["version"] = schema_version;
        json::object public_doc = doc_;
        const json::value secrets = split_credentials(public_doc);
        // The temp files are created 0600 (mkstemps) before any byte is written: key
        // material is never readable by others, not even for a moment. The keys are
        // written before config.json loses them, so a crash between the two writes
        // leaves them in both files rather than in neither.
        auto write = [&](const fs::path& target, const std::string& text, const char* temp_name) {
            auto err = rath::detail::write_file_atomically(target, text,
                                                           {.temp_name = temp_name, .mode = 0600, .durable = true});
            if (err.stage == rath::detail::AtomicWriteError::Stage::create)
                throw ConfigError("cannot create a temporary file in " + dir.string() + ": " + std::strerror(err.error));
            if (err) throw ConfigError("cannot write " + target.string() + ": " + std::strerror(err.error));
        };
        const fs::path sidecar = credentials_path(path_);
        if (!secrets.is_null()) {
            write(sidecar, dump_pretty(secrets), ".credentials_XXXXXX.tmp");
        } else if (fs::remove(sidecar, ec); ec && ec != std::errc::no_such_file_or_directory) {
            throw ConfigError("cannot remove " + sidecar.string() + ": " + ec.message());
        }
        write(path_, dump_pretty(public_doc), ".config_XXXXXX.tmp");
        if (migrate_inline_keys_) {
            rath::log(LogLevel::info, "rath.config",
                      "moved the API keys of " + path_.string() + " into " + sidecar.string());
            migrate_inline_keys_ = false;
        }
    }
    std::lock_guard lk(cache_mu());
    cache().erase(path_.string());
}

}  // namespace rath::config
