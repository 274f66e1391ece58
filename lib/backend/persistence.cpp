#include <rath/backend/persistence.hpp>
#include <rath/backend/registry.hpp>
#include <rath/config/paths.hpp>
#include <rath/log.hpp>

#include "lib/config/atomic_file.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/pyjson.hpp"
#include "lib/text/pyrepr.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace rath::backend::persistence {

namespace fs = std::filesystem;
namespace json = boost::json;
using rath::detail::pyrepr;
using SysClock = std::chrono::system_clock;

namespace {

int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Records live under rath's directory (llm.md §8.1), resolved by the one rule in config.
fs::path default_root() { return rath::config::resolve_config_dir(); }

fs::path base(const Root& root) { return root ? *root : default_root(); }

std::mutex& path_lock(const fs::path& p) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<std::mutex>> locks;
    std::lock_guard lk(mu);
    auto& m = locks[p.string()];
    if (!m) m = std::make_unique<std::mutex>();
    return *m;
}

// Durable (fsync of file and directory): a reader sees the old or the new record, never
// a torn one, and no debris is left.
void atomic_write(const fs::path& target, const std::string& text, mode_t mode) {
    std::lock_guard lk(path_lock(target));
    auto err = rath::detail::write_file_atomically(
        target, text, {.temp_name = ".atomic_XXXXXX.tmp", .mode = mode, .durable = true});
    if (err.stage == rath::detail::AtomicWriteError::Stage::create)
        throw BackendError("cannot create a temp file in " + pyrepr(target.parent_path().string()));
    if (err) throw BackendError("cannot write sandbox record " + pyrepr(target.string()));
}

json::value record_to_json(const RemoteRecord& r) {
    json::object o;
    o["schema_version"] = r.schema_version;
    o["id"] = r.id;
    o["backend"] = r.backend;
    o["remote_id"] = r.remote_id;
    o["spec"] = spec_to_json(r.spec);
    o["created_at"] = r.created_at;
    o["last_used_at"] = r.last_used_at;
    return o;
}

void write_record(const RemoteRecord& r, const Root& root) {
    // json.dump(indent=2, ensure_ascii=False) and a final newline (backend_tools.md).
    std::string text = rath::detail::pyjson(record_to_json(r), {.indent = 2});
    text += "\n";
    fs::create_directories(remote_root(root));
    atomic_write(remote_record_path(r.id, root), text, 0600);
}

std::optional<RemoteRecord> decode_record(const json::value& v) {
    if (!v.is_object()) return std::nullopt;
    auto& o = v.as_object();
    auto str = [&](const char* k) -> std::optional<std::string> {
        auto it = o.find(k);
        if (it == o.end() || !it->value().is_string()) return std::nullopt;
        return std::string(it->value().as_string());
    };
    RemoteRecord r;
    auto id = str("id"), rid = str("remote_id"), c = str("created_at"), u = str("last_used_at");
    if (!id || !rid || !c || !u) return std::nullopt;
    r.id = *id;
    r.remote_id = *rid;
    r.created_at = *c;
    r.last_used_at = *u;
    r.backend = str("backend").value_or("");
    if (auto it = o.find("schema_version"); it != o.end() && it->value().is_int64())
        r.schema_version = static_cast<int>(it->value().as_int64());
    if (auto it = o.find("spec"); it != o.end()) r.spec = spec_from_json(it->value());
    return r;
}

std::optional<RemoteRecord> read_record(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    auto v = rath::detail::parse_json(ss.str());
    if (!v) {
        rath::log(LogLevel::warning, "rath.backend", "ignoring malformed sandbox record " + p.string());
        return std::nullopt;
    }
    try {
        auto r = decode_record(*v);
        if (!r) rath::log(LogLevel::warning, "rath.backend", "ignoring malformed sandbox record " + p.string());
        return r;
    } catch (const std::exception& e) {
        rath::log(LogLevel::warning, "rath.backend",
                  "ignoring malformed sandbox record " + p.string() + ": " + e.what());
        return std::nullopt;
    }
}

bool is_uuid(const std::string& s) {
    try {
        return canonical_sandbox_id(s) == s;
    } catch (const SandboxIdError&) {
        return false;
    }
}

}  // namespace

std::string canonical_sandbox_id(std::string_view id) {
    std::string_view s = id;
    auto trim = [](std::string_view x) {
        while (!x.empty() && std::isspace(static_cast<unsigned char>(x.front()))) x.remove_prefix(1);
        while (!x.empty() && std::isspace(static_cast<unsigned char>(x.back()))) x.remove_suffix(1);
        return x;
    };
    s = trim(s);
    if (s.size() >= 9 && (s.substr(0, 9) == "urn:uuid:" || s.substr(0, 9) == "URN:UUID:")) s.remove_prefix(9);
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
    std::string hex;
    for (char c : s) {
        if (c == '-') continue;
        if (hexval(c) < 0) throw SandboxIdError("sandbox_id must be a UUID");
        hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (hex.size() != 32) throw SandboxIdError("sandbox_id must be a UUID");
    return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
           hex.substr(20);
}

std::string new_sandbox_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    unsigned char b[16];
    for (int i = 0; i < 2; ++i) {
        auto v = rng();
        for (int k = 0; k < 8; ++k) b[i * 8 + k] = static_cast<unsigned char>(v >> (8 * k));
    }
    b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);
    b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);
    static constexpr char hx[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 16; ++i) {
        s += hx[b[i] >> 4];
        s += hx[b[i] & 15];
    }
    return canonical_sandbox_id(s);
}

fs::path sandboxes_root(const Root& root) { return base(root) / sandboxes_dir_name; }
fs::path local_root(const Root& root) { return sandboxes_root(root) / local_dir_name; }
fs::path remote_root(const Root& root) { return sandboxes_root(root) / remote_dir_name; }

void ensure_dirs(const Root& root) {
    fs::create_directories(local_root(root));
    fs::create_directories(remote_root(root));
}

fs::path local_path(std::string_view id, const Root& root) { return local_root(root) / canonical_sandbox_id(id); }

fs::path ensure_local(std::string_view id, const Root& root) {
    auto p = local_path(id, root);
    fs::create_directories(p);
    return p;
}

std::string alloc_local_id(const Root& root) {
    for (;;) {
        std::string id = new_sandbox_id();
        auto p = local_path(id, root);
        fs::create_directories(p.parent_path());
        if (::mkdir(p.c_str(), 0700) == 0) return id;
        if (errno != EEXIST) throw BackendError("cannot create sandbox directory " + pyrepr(p.string()));
    }
}

std::vector<std::string> list_local(const Root& root) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::directory_iterator(local_root(root), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code e2;
        if (!it->is_directory(e2)) continue;
        std::string name = it->path().filename().string();
        if (is_uuid(name)) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool delete_local(std::string_view id, const Root& root) {
    auto p = local_path(id, root);
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return false;
    fs::remove_all(p, ec);  // never follows symlinks
    return !ec;
}

std::vector<std::string> prune_local(std::chrono::seconds older_than, const Root& root) {
    std::vector<std::string> out;
    auto cutoff = SysClock::now() - older_than;
    for (auto& id : list_local(root)) {
        struct stat st {};
        if (::stat(local_path(id, root).c_str(), &st) != 0) continue;
        auto mtime = SysClock::from_time_t(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
        if (mtime < cutoff && delete_local(id, root)) out.push_back(id);
    }
    return out;
}

SandboxSpec local_spec(std::string_view id, const Root& root) {
    return SandboxSpec::from_working_dir(local_path(id, root).string());
}

fs::path remote_record_path(std::string_view id, const Root& root) {
    return remote_root(root) / (canonical_sandbox_id(id) + std::string(record_suffix));
}

std::string record_remote(std::string_view backend, std::string_view remote_id, const std::optional<SandboxSpec>& spec,
                          std::optional<std::string> sandbox_id, const Root& root) {
    RemoteRecord r;
    r.schema_version = schema_version;
    r.id = sandbox_id ? canonical_sandbox_id(*sandbox_id) : new_sandbox_id();
    r.backend = std::string(backend);
    r.remote_id = std::string(remote_id);
    r.spec = spec;
    r.created_at = r.last_used_at = iso_utc(SysClock::now());
    write_record(r, root);
    return r.id;
}

void touch_remote(std::string_view id, const Root& root) {
    auto p = remote_record_path(id, root);
    std::error_code ec;
    if (!fs::exists(p, ec)) return;
    auto r = read_record(p);
    if (!r) return;  // unreadable: logged by read_record, ignored
    r->last_used_at = iso_utc(SysClock::now());
    write_record(*r, root);
}

std::optional<RemoteRecord> load_remote(std::string_view id, const Root& root) {
    auto p = remote_record_path(id, root);
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    return read_record(p);
}

std::vector<RemoteRecord> list_remote(const Root& root) {
    std::vector<RemoteRecord> out;
    std::error_code ec;
    for (auto it = fs::directory_iterator(remote_root(root), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        auto name = it->path().filename().string();
        if (name.size() <= record_suffix.size() || !name.ends_with(record_suffix) || name.front() == '.') continue;
        if (auto r = read_record(it->path())) out.push_back(std::move(*r));
    }
    std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) {
        auto ta = parse_iso(a.created_at), tb = parse_iso(b.created_at);
        if (ta && tb) return *ta < *tb;
        return a.created_at < b.created_at;
    });
    return out;
}

bool delete_remote(std::string_view id, const Root& root) {
    std::error_code ec;
    return fs::remove(remote_record_path(id, root), ec);
}

std::vector<std::string> prune_remote(std::chrono::seconds older_than, const Root& root) {
    std::vector<std::string> out;
    auto cutoff = SysClock::now() - older_than;
    for (auto& r : list_remote(root)) {
        auto t = parse_iso(r.last_used_at);
        if (t && *t < cutoff && delete_remote(r.id, root)) out.push_back(r.id);
    }
    return out;
}

SandboxPtr reattach_remote(std::string_view id, const Root& root) {
    auto rec = load_remote(id, root);
    if (!rec) {
        std::vector<std::string> ids;
        for (auto& r : list_remote(root)) ids.push_back(r.id);
        throw SandboxRecordNotFound("no remote sandbox recorded under id=" + pyrepr(id) +
                                    "; available: " + rath::detail::pyrepr_list(ids));
    }
    Backend& b = get_backend(rec->backend);
    if (!b.supports_attach())
        throw ReattachUnsupported("backend " + pyrepr(rec->backend) +
                                  " does not support reattach (no .attach(remote_id) method); cannot reuse remote_id " +
                                  pyrepr(rec->remote_id));
    auto sb = b.attach(rec->remote_id, rec->spec);
    touch_remote(rec->id, root);
    return sb;
}

json::value spec_to_json(const std::optional<SandboxSpec>& spec) {
    if (!spec) return nullptr;
    return spec->to_json();
}

std::optional<SandboxSpec> spec_from_json(const json::value& v) {
    if (v.is_null()) return std::nullopt;
    return SandboxSpec::from_json(v);
}

std::string iso_utc(SysClock::time_point t) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(us / 1000000);
    long frac = static_cast<long>(us % 1000000);
    if (frac < 0) {
        frac += 1000000;
        --secs;
    }
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string s = buf;
    if (frac) {
        std::snprintf(buf, sizeof buf, ".%06ld", frac);
        s += buf;
    }
    return s + "+00:00";
}

std::optional<SysClock::time_point> parse_iso(std::string_view s) {
    int Y, M, D, h = 0, m = 0;
    double sec = 0;
    std::string str(s);
    int n = 0;
    if (std::sscanf(str.c_str(), "%4d-%2d-%2d%n", &Y, &M, &D, &n) != 3) return std::nullopt;
    std::size_t pos = static_cast<std::size_t>(n);
    if (pos < str.size() && (str[pos] == 'T' || str[pos] == ' ')) {
        int k = 0;
        if (std::sscanf(str.c_str() + pos + 1, "%2d:%2d:%lf%n", &h, &m, &sec, &k) < 2) return std::nullopt;
        pos += 1 + static_cast<std::size_t>(k);
    }
    long offset = 0;  // seconds east of UTC; no zone counts as UTC
    if (pos < str.size()) {
        char sign = str[pos];
        if (sign == 'Z') {
        } else if (sign == '+' || sign == '-') {
            int oh = 0, om = 0;
            if (std::sscanf(str.c_str() + pos + 1, "%2d:%2d", &oh, &om) < 1) return std::nullopt;
            offset = (oh * 3600L + om * 60L) * (sign == '-' ? -1 : 1);
        } else {
            return std::nullopt;
        }
    }
    std::tm tm{};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = 0;
    std::time_t t = ::timegm(&tm);
    auto tp = SysClock::from_time_t(t) + std::chrono::duration_cast<SysClock::duration>(std::chrono::duration<double>(sec)) -
              std::chrono::seconds(offset);
    return tp;
}

}  // namespace rath::backend::persistence
