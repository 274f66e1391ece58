#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>

#include "lib/session/uuid.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/pystr.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rath::persistence {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
        int e = errno;
        throw PersistenceError("failed to read " + p.string() + ": " + std::strerror(e), p.string());
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw PersistenceError("failed to read " + p.string() + ": I/O error", p.string());
    return std::move(ss).str();
}

// Calls fn(lineno, line) for every complete, non-blank line. A last line without "\n"
// is what a crash mid-write leaves behind: it is dropped, never parsed. Lines are split
// on "\n" only (not on U+2028 and friends, which may appear inside strings).
template <class F>
void for_each_line(std::string_view text, F&& fn) {
    std::size_t lineno = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) break;
        ++lineno;
        std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        auto ws = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; };
        while (!line.empty() && ws(line.front())) line.remove_prefix(1);
        while (!line.empty() && ws(line.back())) line.remove_suffix(1);
        if (line.empty()) continue;
        fn(lineno, line);
    }
}

struct LineError {
    const fs::path& path;
    std::size_t lineno;
    PersistenceError operator()(const std::string& msg) const {
        return PersistenceError(path.string() + ":" + std::to_string(lineno) + ": " + msg, path.string(), lineno);
    }
};

boost::json::object parse_record(const fs::path& path, std::size_t lineno, std::string_view line) {
    LineError err{path, lineno};
    detail::JsonParseError pe;
    auto v = detail::parse_json(line, &pe);
    if (!v) throw err("invalid JSON (col " + std::to_string(pe.column) + "): " + pe.message);
    if (!v->is_object()) throw err(std::string("record must be a JSON object, got ") + rath::detail::py_type(*v));
    return std::move(v->get_object());
}

std::string record_type(const boost::json::object& o) {
    auto it = o.find("record_type");
    if (it == o.end()) return "None";
    if (it->value().is_string()) return std::string(it->value().get_string());
    return std::string(rath::detail::py_type(it->value()));
}

int declared_version(const boost::json::object& h) {
    auto it = h.find("schema_version");
    if (it == h.end() || !it->value().is_int64()) return 0;
    return static_cast<int>(it->value().get_int64());
}

PersistedSessionHeader decode_header(const boost::json::object& h, int original_version, const LineError& err) {
    PersistedSessionHeader out;
    out.schema_version = original_version;
    auto str_field = [&](const char* key) -> std::optional<std::string> {
        auto it = h.find(key);
        if (it == h.end() || !it->value().is_string()) return std::nullopt;
        return std::string(it->value().get_string());
    };
    auto id = str_field("id");
    if (!id) throw err("malformed header record: missing or non-string 'id'");
    auto cid = detail::canonical_uuid(*id);
    if (!cid) throw err("malformed header record: 'id' is not a UUID: " + *id);
    out.id = *cid;
    auto created = str_field("created_at");
    if (!created) throw err("malformed header record: missing or non-string 'created_at'");
    auto tp = parse_iso_datetime(*created);
    if (!tp) throw err("malformed header record: 'created_at' is not an ISO-8601 datetime: " + *created);
    out.created_at = *created;
    out.created_at_time = *tp;
    if (auto it = h.find("parent_session_ids"); it != h.end() && it->value().is_array())
        for (auto& p : it->value().get_array())
            if (p.is_string())
                if (auto c = detail::canonical_uuid(p.get_string())) out.parent_session_ids.push_back(*c);
    if (auto op = str_field("lineage_operator")) out.lineage_operator = *op;
    if (auto k = str_field("lineage_kind")) out.lineage_kind = lineage_kind_from_string(*k).value_or(LineageKind::unknown);
    if (auto it = h.find("lineage_extras"); it != h.end() && it->value().is_array())
        for (auto& e : it->value().get_array())
            if (e.is_array() && e.get_array().size() == 2 && e.get_array()[0].is_string())
                out.lineage_extras.emplace_back(std::string(e.get_array()[0].get_string()), e.get_array()[1]);
    out.sandbox_backend = str_field("sandbox_backend");
    if (auto it = h.find("sandbox_spec"); it != h.end() && it->value().is_object()) {
        try {
            out.sandbox_spec = sandbox_spec_from_json(it->value().get_object());
        } catch (const PersistenceError& e) {
            throw err(std::string("malformed header record: ") + e.what());
        }
    }
    out.sandbox_handle_id = str_field("sandbox_handle_id");
    return out;
}

std::optional<TokenUsage> decode_usage(const boost::json::value& v) {
    if (!v.is_object()) return std::nullopt;
    auto num = [&](const char* k) -> std::int64_t {
        auto it = v.get_object().find(k);
        if (it == v.get_object().end() || !it->value().is_number()) return 0;
        return it->value().to_number<std::int64_t>();
    };
    TokenUsage u;
    u.prompt_tokens = num("prompt_tokens");
    u.completion_tokens = num("completion_tokens");
    u.total_tokens = num("total_tokens");
    return u;
}

fs::path canonical_or_absolute(const fs::path& p) {
    std::error_code ec;
    auto c = fs::canonical(p, ec);
    return ec ? fs::absolute(p) : c;
}

}  // namespace

PersistedSession load_session_file(const fs::path& path) {
    std::string text = read_file(path);
    PersistedSession out;
    out.path = canonical_or_absolute(path);
    bool have_header = false;
    int original_version = current_schema_version;
    std::vector<ChunkRowPtr> rows;
    for_each_line(text, [&](std::size_t lineno, std::string_view line) {
        LineError err{path, lineno};
        boost::json::object rec = parse_record(path, lineno, line);
        std::string rt = record_type(rec);
        if (rt == "header") {
            if (have_header) throw err("duplicate header record");
            original_version = declared_version(rec);
            try {
                rec = upgrade_header(std::move(rec), original_version);
            } catch (const SessionError& e) {
                throw err(e.what());
            }
            out.header = decode_header(rec, original_version, err);
            have_header = true;
        } else if (rt == "chunk") {
            if (!have_header) throw err("chunk record before header");
            rec = upgrade_chunk(std::move(rec), original_version);
            auto k = rec.find("kind");
            std::optional<ChunkKind> kind;
            if (k != rec.end() && k->value().is_string()) kind = chunk_kind_from_string(k->value().get_string());
            if (!kind) {
                std::string shown = k == rec.end() ? "None" : (k->value().is_string() ? std::string(k->value().get_string()) : rath::detail::py_type(k->value()));
                throw err("invalid chunk kind: " + shown);
            }
            auto p = rec.find("payload");
            if (p == rec.end() || !p->value().is_object()) throw err("chunk payload must be a JSON object");
            rows.push_back(make_chunk_row(*kind, p->value().get_object()));
        } else if (rt == "trailer") {
            auto u = rec.find("cumulative_usage");
            out.usage = u == rec.end() ? std::nullopt : decode_usage(u->value());
            out.closed = true;
            out.trailer = std::move(rec);
        } else {
            throw err("unknown record_type='" + rt + "'");
        }
    });
    if (!have_header) throw PersistenceError(path.string() + ": no header record found", path.string());
    out.chunks = ChunkTable(std::span<const ChunkRowPtr>(rows));
    return out;
}

PersistedSession load_session(std::string_view session_id, std::optional<fs::path> path) {
    fs::path target = path ? *path : session_file_path(session_id);
    std::error_code ec;
    if (!fs::is_regular_file(target, ec)) {
        if (!path) {
            fs::path partial = session_partial_path(session_id);
            if (fs::is_regular_file(partial, ec)) return load_session_file(partial);
        }
        throw PersistenceError("persisted session file not found: " + target.string(), target.string());
    }
    return load_session_file(target);
}

boost::asio::awaitable<PersistedSession> async_load_session(std::string session_id, std::optional<fs::path> path) {
    auto& rt = async::Runtime::default_runtime();
    auto job = [id = std::move(session_id), p = std::move(path)] { return load_session(id, p); };
    co_return co_await rath::async::Runtime::async_blocking(rt.blocking_executor(), std::move(job));
}

Session PersistedSession::to_session() const {
    SessionOptions o;
    o.id = header.id;
    o.sandbox_backend = header.sandbox_backend;
    o.sandbox_spec = header.sandbox_spec;
    o.lineage = Lineage{header.parent_session_ids, header.lineage_operator, header.lineage_kind, header.lineage_extras};
    o.usage = usage;
    return Session(chunks, std::move(o));
}

std::pair<Session, Session> PersistedSession::to_resumable_pair(std::optional<std::string> agent_prompt) const {
    SessionOptions o;
    o.sandbox_backend = header.sandbox_backend;
    o.sandbox_spec = header.sandbox_spec;
    Session user(chunks, std::move(o));
    if (agent_prompt) return {user, Session::from_agent_prompt(std::move(*agent_prompt))};
    for (const auto& row : chunks) {
        if (row->kind() != ChunkKind::system) continue;
        auto c = row->payload().find("content");
        if (c == row->payload().end() || c->value().is_null()) return {user, Session(ChunkTable{})};
        std::string text = c->value().is_string() ? std::string(c->value().get_string()) : std::string();
        return {user, Session::from_agent_prompt(std::move(text))};
    }
    return {user, Session(ChunkTable{})};
}

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

PersistedSessionMeta scan_meta(const fs::path& path) {
    std::string text = read_file(path);
    PersistedSessionMeta m;
    m.path = canonical_or_absolute(path);
    bool have_header = false;
    for_each_line(text, [&](std::size_t lineno, std::string_view line) {
        LineError err{path, lineno};
        boost::json::object rec = parse_record(path, lineno, line);
        std::string rt = record_type(rec);
        if (rt == "header") {
            if (have_header) return;  // only the first header counts here
            int v = declared_version(rec);
            try {
                rec = upgrade_header(std::move(rec), v);
            } catch (const SessionError& e) {
                throw err(e.what());
            }
            auto h = decode_header(rec, v, err);
            m.id = h.id;
            m.created_at = h.created_at;
            m.created_at_time = h.created_at_time;
            m.lineage_operator = h.lineage_operator;
            m.lineage_kind = h.lineage_kind;
            have_header = true;
        } else if (rt == "chunk") {
            ++m.chunk_count;
        } else if (rt == "trailer") {
            m.closed = true;
        }
    });
    if (!have_header) throw PersistenceError(path.string() + ": no header record found", path.string());
    return m;
}

}  // namespace

std::vector<PersistedSessionMeta> list_persisted_sessions(const ListOptions& options) {
    fs::path dir = options.dir ? *options.dir : default_sessions_dir();
    std::vector<PersistedSessionMeta> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::error_code fec;
        if (!e.is_regular_file(fec)) continue;
        std::string name = e.path().filename().string();
        if (ends_with(name, session_file_suffix) || ends_with(name, session_partial_suffix)) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    });
    for (const auto& f : files) {
        try {
            out.push_back(scan_meta(f));
        } catch (const PersistenceError& e) {
            rath::log(LogLevel::warning, "rath.session.persistence",
                      std::string("skipping unreadable session file: ") + e.what());
            if (options.skipped) options.skipped->push_back(e);
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const PersistedSessionMeta& a, const PersistedSessionMeta& b) {
        return a.created_at_time < b.created_at_time;
    });
    return out;
}

bool delete_session(std::string_view session_id, std::optional<fs::path> path) {
    bool removed = false;
    std::error_code ec;
    fs::path target = path ? *path : session_file_path(session_id);
    if (fs::remove(target, ec)) removed = true;
    if (!path && fs::remove(session_partial_path(session_id), ec)) removed = true;
    return removed;
}

std::vector<std::string> prune_sessions(std::chrono::system_clock::duration older_than, std::optional<fs::path> dir) {
    auto cutoff = std::chrono::system_clock::now() - older_than;
    std::vector<std::string> removed;
    for (const auto& m : list_persisted_sessions({.dir = dir}))
        if (m.created_at_time < cutoff && delete_session(m.id, m.path)) removed.push_back(m.id);
    return removed;
}

}  // namespace rath::persistence
