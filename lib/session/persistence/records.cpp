#include <rath/session/persistence/records.hpp>

#include "lib/text/pyjson.hpp"

#include <boost/json/array.hpp>

#include <ctime>
#include <map>
#include <mutex>

namespace rath::persistence {

namespace {

std::mutex g_mig_mu;
std::map<int, RecordMigration>& header_migrations() {
    static std::map<int, RecordMigration> m;
    return m;
}
std::map<int, RecordMigration>& chunk_migrations() {
    static std::map<int, RecordMigration> m;
    return m;
}

void check_version(int v) {
    if (v >= current_schema_version)
        throw SessionError("refusing to register migration from version " + std::to_string(v) +
                           " >= CURRENT_SCHEMA_VERSION=" + std::to_string(current_schema_version));
}

}  // namespace

boost::json::value sandbox_spec_to_json(const std::optional<backend::SandboxSpec>& spec) {
    if (!spec) return nullptr;
    boost::json::object o;
    o["image"] = spec->image ? boost::json::value(*spec->image) : boost::json::value(nullptr);
    if (spec->entrypoint) {
        boost::json::array a;
        for (auto& e : *spec->entrypoint) a.emplace_back(e);
        o["entrypoint"] = std::move(a);
    } else {
        o["entrypoint"] = nullptr;
    }
    if (spec->env) {
        boost::json::object env;
        for (auto& [k, v] : *spec->env) env[k] = v;
        o["env"] = std::move(env);
    } else {
        o["env"] = nullptr;
    }
    o["timeout_seconds"] = spec->timeout ? boost::json::value(spec->timeout->count()) : boost::json::value(nullptr);
    o["working_dir"] = spec->working_dir ? boost::json::value(*spec->working_dir) : boost::json::value(nullptr);
    return o;
}

backend::SandboxSpec sandbox_spec_from_json(const boost::json::object& o) {
    backend::SandboxSpec s;
    auto bad = [](const char* key, const char* want) {
        return PersistenceError(std::string("sandbox_spec.") + key + " must be " + want);
    };
    auto str = [&](const char* key) -> std::optional<std::string> {
        auto it = o.find(key);
        if (it == o.end() || it->value().is_null()) return std::nullopt;
        if (!it->value().is_string()) throw bad(key, "a string or null");
        return std::string(it->value().get_string());
    };
    s.image = str("image");
    s.working_dir = str("working_dir");
    if (auto it = o.find("entrypoint"); it != o.end() && !it->value().is_null()) {
        if (!it->value().is_array()) throw bad("entrypoint", "a list of strings or null");
        std::vector<std::string> ep;
        for (auto& e : it->value().get_array()) {
            if (!e.is_string()) throw bad("entrypoint", "a list of strings or null");
            ep.emplace_back(e.get_string());
        }
        if (!ep.empty()) s.entrypoint = std::move(ep);
    }
    if (auto it = o.find("env"); it != o.end() && !it->value().is_null()) {
        if (!it->value().is_object()) throw bad("env", "an object of strings or null");
        std::map<std::string, std::string> env;
        for (auto& kv : it->value().get_object()) {
            if (!kv.value().is_string()) throw bad("env", "an object of strings or null");
            env.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
        }
        if (!env.empty()) s.env = std::move(env);
    }
    if (auto it = o.find("timeout_seconds"); it != o.end() && !it->value().is_null()) {
        if (!it->value().is_number()) throw bad("timeout_seconds", "a number or null");
        s.timeout = std::chrono::duration<double>(it->value().to_number<double>());
    }
    return s;
}

boost::json::object make_header_record(const Session& s, const std::optional<std::string>& handle_id,
                                       const std::string& created_at) {
    Lineage l = s.lineage();
    boost::json::object h;
    h["record_type"] = "header";
    h["schema_version"] = current_schema_version;
    h["id"] = s.id();
    h["created_at"] = created_at;
    boost::json::array parents;
    for (auto& p : l.parent_session_ids) parents.emplace_back(p);
    h["parent_session_ids"] = std::move(parents);
    h["lineage_operator"] = l.op;
    h["lineage_kind"] = to_string(l.kind);
    boost::json::array extras;
    for (auto& [k, v] : l.extras) extras.emplace_back(boost::json::array{boost::json::value(k), v});
    h["lineage_extras"] = std::move(extras);
    auto backend = s.sandbox_backend();
    h["sandbox_backend"] = backend ? boost::json::value(*backend) : boost::json::value(nullptr);
    h["sandbox_spec"] = sandbox_spec_to_json(s.sandbox_spec());
    h["sandbox_handle_id"] = handle_id ? boost::json::value(*handle_id) : boost::json::value(nullptr);
    return h;
}

boost::json::object make_chunk_record(std::size_t index, const ChunkRow& row) {
    boost::json::object c;
    c["record_type"] = "chunk";
    c["index"] = index;
    c["kind"] = to_string(row.kind());
    c["payload"] = row.payload();
    return c;
}

boost::json::object make_trailer_record(const std::string& closed_at, std::size_t count,
                                        const std::optional<TokenUsage>& usage) {
    boost::json::object t;
    t["record_type"] = "trailer";
    t["closed_at"] = closed_at;
    t["final_chunk_count"] = count;
    t["cumulative_usage"] = token_usage_to_json(usage);
    return t;
}

std::string record_line(const boost::json::object& record) {
    std::string line;
    detail::pyjson_append(line, record, {.ensure_ascii = false, .escape_line_separators = true});
    line += '\n';
    return line;
}

std::string iso_utc(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
    auto secs = static_cast<std::time_t>(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
    auto frac = static_cast<long>(us - static_cast<long long>(secs) * 1000000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string out = buf;
    if (frac) {
        char f[32];
        std::snprintf(f, sizeof f, ".%06ld", frac);
        out += f;
    }
    return out + "+00:00";
}

std::string iso_utc_now() { return iso_utc(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> parse_iso_datetime(std::string_view s) {
    using namespace std::chrono;
    std::size_t i = 0;
    auto digits = [&](std::size_t n, int& out) {
        if (i + n > s.size()) return false;
        out = 0;
        for (std::size_t k = 0; k < n; ++k) {
            char c = s[i + k];
            if (c < '0' || c > '9') return false;
            out = out * 10 + (c - '0');
        }
        i += n;
        return true;
    };
    auto expect = [&](char c) {
        if (i < s.size() && s[i] == c) {
            ++i;
            return true;
        }
        return false;
    };
    int Y, M, D, h = 0, m = 0, sec = 0;
    long us = 0;
    if (!digits(4, Y) || !expect('-') || !digits(2, M) || !expect('-') || !digits(2, D)) return std::nullopt;
    if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
        ++i;
        if (!digits(2, h)) return std::nullopt;
        if (expect(':')) {
            if (!digits(2, m)) return std::nullopt;
            if (expect(':')) {
                if (!digits(2, sec)) return std::nullopt;
                if (expect('.')) {
                    std::size_t start = i;
                    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
                    std::size_t n = i - start;
                    if (n == 0 || n > 6) return std::nullopt;
                    us = std::stol(std::string(s.substr(start, n)));
                    for (std::size_t k = n; k < 6; ++k) us *= 10;
                }
            }
        }
    }
    long offset = 0;
    if (i < s.size()) {
        if (s[i] == 'Z') {
            ++i;
        } else if (s[i] == '+' || s[i] == '-') {
            int sign = s[i] == '-' ? -1 : 1;
            ++i;
            int oh, om = 0;
            if (!digits(2, oh)) return std::nullopt;
            if (expect(':') && !digits(2, om)) return std::nullopt;
            offset = sign * (oh * 3600L + om * 60L);
        } else {
            return std::nullopt;
        }
    }
    if (i != s.size()) return std::nullopt;
    year_month_day ymd{year{Y}, month{static_cast<unsigned>(M)}, day{static_cast<unsigned>(D)}};
    if (!ymd.ok() || h > 23 || m > 59 || sec > 59) return std::nullopt;
    auto tp = sys_days{ymd} + hours{h} + minutes{m} + seconds{sec} + microseconds{us} - seconds{offset};
    return time_point_cast<system_clock::duration>(tp);
}

void register_header_migration(int v, RecordMigration fn) {
    check_version(v);
    std::lock_guard lk(g_mig_mu);
    header_migrations()[v] = std::move(fn);
}

void register_chunk_migration(int v, RecordMigration fn) {
    check_version(v);
    std::lock_guard lk(g_mig_mu);
    chunk_migrations()[v] = std::move(fn);
}

boost::json::object upgrade_header(boost::json::object header, int v) {
    if (v > current_schema_version)
        throw SessionError("persisted file declares schema_version=" + std::to_string(v) +
                           " which is newer than CURRENT_SCHEMA_VERSION=" + std::to_string(current_schema_version) +
                           "; refusing to downgrade");
    while (v < current_schema_version) {
        RecordMigration fn;
        {
            std::lock_guard lk(g_mig_mu);
            auto it = header_migrations().find(v);
            if (it != header_migrations().end()) fn = it->second;
        }
        if (!fn)
            throw SessionError("no header migrator registered for schema_version=" + std::to_string(v) +
                               "; file may be from a newer OpenRath release");
        header = fn(std::move(header));
        ++v;
    }
    return header;
}

boost::json::object upgrade_chunk(boost::json::object chunk, int v) {
    for (; v < current_schema_version; ++v) {
        RecordMigration fn;
        {
            std::lock_guard lk(g_mig_mu);
            auto it = chunk_migrations().find(v);
            if (it != chunk_migrations().end()) fn = it->second;
        }
        if (fn) chunk = fn(std::move(chunk));
    }
    return chunk;
}

namespace testing {
void clear_migrations() {
    std::lock_guard lk(g_mig_mu);
    header_migrations().clear();
    chunk_migrations().clear();
}
}  // namespace testing

}  // namespace rath::persistence
