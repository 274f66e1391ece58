#include <rath/async/runtime.hpp>
#include <rath/backend/persistence.hpp>
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
#include <set>
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

// What a chunk's payload must hold for its kind (session.md §1.2); extra keys are
// tolerated (a newer writer may add some). Returns the problem, or "" when it is sound.
std::string payload_problem(ChunkKind kind, const boost::json::object& p) {
    auto field = [&](const char* key) -> const boost::json::value* {
        auto it = p.find(key);
        return it == p.end() ? nullptr : &it->value();
    };
    auto type_of = [](const boost::json::value* v) { return v ? rath::detail::py_type(*v) : std::string("missing"); };
    auto need_string = [&](const char* key, bool or_null) -> std::string {
        const boost::json::value* v = field(key);
        if (v && (v->is_string() || (or_null && v->is_null()))) return {};
        return std::string("'") + key + "' must be a string" + (or_null ? " or null" : "") + ", got " + type_of(v);
    };
    switch (kind) {
        case ChunkKind::user: return need_string("content", false);
        case ChunkKind::system: return need_string("content", true);
        case ChunkKind::tool_result: {
            for (const char* key : {"tool_call_id", "name", "content"})
                if (auto e = need_string(key, false); !e.empty()) return e;
            return {};
        }
        case ChunkKind::assistant: {
            if (auto e = need_string("content", true); !e.empty()) return e;
            const boost::json::value* calls = field("tool_calls");
            if (calls && calls->is_null()) return {};
            if (!calls || !calls->is_array() || calls->get_array().empty())
                return "'tool_calls' must be a non-empty list or null, got " + type_of(calls);
            for (const auto& c : calls->get_array()) {
                const auto* call = c.if_object();
                const boost::json::value* id = call ? call->if_contains("id") : nullptr;
                const boost::json::value* fn = call ? call->if_contains("function") : nullptr;
                const auto* fo = fn ? fn->if_object() : nullptr;
                const boost::json::value* name = fo ? fo->if_contains("name") : nullptr;
                const boost::json::value* args = fo ? fo->if_contains("arguments") : nullptr;
                if (!id || !id->is_string() || !name || !name->is_string() || !args || !args->is_string())
                    return "each of 'tool_calls' must be {\"id\": str, \"function\": {\"name\": str, \"arguments\": str}}";
            }
            return {};
        }
    }
    return {};
}

// The call ids of an assistant row (none for other rows); payload_problem has passed.
std::vector<std::string> call_ids(const ChunkRow& row) {
    std::vector<std::string> ids;
    if (row.kind() != ChunkKind::assistant) return ids;
    const auto* calls = row.payload().if_contains("tool_calls");
    if (!calls || !calls->is_array()) return ids;
    for (const auto& c : calls->get_array())
        if (const auto* o = c.if_object())
            if (const auto* id = o->if_contains("id"); id && id->is_string()) ids.emplace_back(id->get_string());
    return ids;
}

// The problem with a tool_result row given the calls made so far, or "". A result must
// answer a call an earlier assistant row made, once: a provider rejects a transcript
// where a tool message comes before (or without) its call.
std::string tool_order_problem(const ChunkRow& row, std::set<std::string>& open_calls,
                               std::set<std::string>& answered) {
    if (row.kind() != ChunkKind::tool_result) {
        for (auto& id : call_ids(row)) open_calls.insert(std::move(id));
        return {};
    }
    const auto* v = row.payload().if_contains("tool_call_id");
    std::string id = v && v->is_string() ? std::string(v->get_string()) : std::string();
    if (answered.contains(id)) return "tool_result for call '" + id + "' answers it a second time";
    if (!open_calls.contains(id)) return "tool_result for call '" + id + "' comes before (or without) its tool call";
    open_calls.erase(id);
    answered.insert(id);
    return {};
}

// The session id a file's name claims ("<uuid>.jsonl" or "<uuid>.jsonl.__partial__"),
// or nullopt for any other name (an explicit path may be called anything).
std::optional<std::string> id_from_file_name(const fs::path& path) {
    std::string name = path.filename().string();
    for (std::string_view suffix : {session_partial_suffix, session_file_suffix}) {
        if (name.size() > suffix.size() && name.ends_with(suffix))
            return detail::canonical_uuid(std::string_view(name).substr(0, name.size() - suffix.size()));
    }
    return std::nullopt;
}

// The structure of one file, checked record by record (session.md §5.2): one header
// first, named like the file; chunks indexed 0, 1, 2, ... in order with the payload
// their kind needs, every tool result after its call; at most one trailer, last, whose
// final_chunk_count is the number of chunks.
class FileReader {
public:
    FileReader(const fs::path& path, std::optional<std::string> expected_id)
        : path_(path), expected_id_(std::move(expected_id)), name_id_(id_from_file_name(path)) {}

    void record(std::size_t lineno, std::string_view line) {
        LineError err{path_, lineno};
        boost::json::object rec = parse_record(path_, lineno, line);
        std::string rt = record_type(rec);
        if (trailer_line_ != 0)
            throw err(std::string(rt == "chunk" ? "chunk record" : "record") + " after the trailer (line " +
                      std::to_string(trailer_line_) + ")");
        if (rt == "header") {
            header(std::move(rec), err);
        } else if (rt == "chunk") {
            chunk(std::move(rec), err);
        } else if (rt == "trailer") {
            trailer(std::move(rec), err, lineno);
        } else {
            throw err("unknown record_type='" + rt + "'");
        }
    }

    PersistedSession finish(bool is_file = true) {
        if (!have_header_) throw PersistenceError(path_.string() + ": no header record found", path_.string());
        if (is_file) out_.path = canonical_or_absolute(path_);
        out_.chunks = ChunkTable(std::span<const ChunkRowPtr>(rows_));
        return std::move(out_);
    }

private:
    void header(boost::json::object rec, const LineError& err) {
        if (have_header_) throw err("duplicate header record");
        original_version_ = declared_version(rec);
        try {
            rec = upgrade_header(std::move(rec), original_version_);
        } catch (const SessionError& e) {
            throw err(e.what());
        }
        out_.header = decode_header(rec, original_version_, err);
        if (name_id_ && *name_id_ != out_.header.id)
            throw err("header id " + out_.header.id + " does not match the file name " + path_.filename().string());
        if (expected_id_ && *expected_id_ != out_.header.id)
            throw err("header id " + out_.header.id + " is not the requested session " + *expected_id_);
        have_header_ = true;
    }

    void chunk(boost::json::object rec, const LineError& err) {
        if (!have_header_) throw err("chunk record before header");
        rec = upgrade_chunk(std::move(rec), original_version_);
        auto ix = rec.find("index");
        if (ix == rec.end() || !ix->value().is_int64())
            throw err("chunk record needs an integer 'index', got " +
                      (ix == rec.end() ? std::string("missing") : rath::detail::py_type(ix->value())));
        const std::int64_t index = ix->value().get_int64();
        const auto expected = static_cast<std::int64_t>(rows_.size());
        if (index >= 0 && index < expected)
            throw err("duplicate chunk index " + std::to_string(index) + " (first at line " +
                      std::to_string(row_lines_[static_cast<std::size_t>(index)]) + ")");
        if (index != expected)
            throw err("chunk index " + std::to_string(index) + " where " + std::to_string(expected) +
                      " was expected: chunks are missing or out of order");
        auto k = rec.find("kind");
        std::optional<ChunkKind> kind;
        if (k != rec.end() && k->value().is_string()) kind = chunk_kind_from_string(k->value().get_string());
        if (!kind) {
            std::string shown = k == rec.end() ? "None" : (k->value().is_string() ? std::string(k->value().get_string()) : rath::detail::py_type(k->value()));
            throw err("invalid chunk kind: " + shown);
        }
        auto p = rec.find("payload");
        if (p == rec.end() || !p->value().is_object()) throw err("chunk payload must be a JSON object");
        if (auto problem = payload_problem(*kind, p->value().get_object()); !problem.empty())
            throw err("malformed " + std::string(to_string(*kind)) + " payload: " + problem);
        ChunkRowPtr row = make_chunk_row(*kind, p->value().get_object());
        if (auto problem = tool_order_problem(*row, open_calls_, answered_); !problem.empty()) throw err(problem);
        rows_.push_back(std::move(row));
        row_lines_.push_back(err.lineno);
    }

    void trailer(boost::json::object rec, const LineError& err, std::size_t lineno) {
        if (!have_header_) throw err("trailer record before header");
        auto n = rec.find("final_chunk_count");
        if (n == rec.end() || !n->value().is_int64())
            throw err("trailer needs an integer 'final_chunk_count', got " +
                      (n == rec.end() ? std::string("missing") : rath::detail::py_type(n->value())));
        if (n->value().get_int64() != static_cast<std::int64_t>(rows_.size()))
            throw err("trailer says final_chunk_count=" + std::to_string(n->value().get_int64()) + " but the file has " +
                      std::to_string(rows_.size()) + " chunks");
        auto u = rec.find("cumulative_usage");
        out_.usage = u == rec.end() ? std::nullopt : decode_usage(u->value());
        out_.closed = true;
        out_.trailer = std::move(rec);
        trailer_line_ = lineno;
    }

    const fs::path& path_;
    std::optional<std::string> expected_id_;
    std::optional<std::string> name_id_;
    PersistedSession out_;
    bool have_header_ = false;
    int original_version_ = current_schema_version;
    std::vector<ChunkRowPtr> rows_;
    std::vector<std::size_t> row_lines_;
    std::set<std::string> open_calls_;
    std::set<std::string> answered_;
    std::size_t trailer_line_ = 0;
};

PersistedSession load_file(const fs::path& path, std::optional<std::string> expected_id) {
    std::string text = read_file(path);
    FileReader reader(path, std::move(expected_id));
    for_each_line(text, [&](std::size_t lineno, std::string_view line) { reader.record(lineno, line); });
    return reader.finish();
}

}  // namespace

PersistedSession load_session_file(const fs::path& path) { return load_file(path, std::nullopt); }

PersistedSession load_session_records(std::string_view source, const std::vector<std::string>& records,
                                      std::optional<std::string> expected_id) {
    const fs::path name{std::string(source)};
    FileReader reader(name, std::move(expected_id));
    std::size_t lineno = 0;
    for (const auto& r : records) reader.record(++lineno, r);
    return reader.finish(false);
}

void check_tool_order(const ChunkTable& rows) {
    std::set<std::string> open_calls;
    std::set<std::string> answered;
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (auto problem = tool_order_problem(*rows[i], open_calls, answered); !problem.empty())
            throw PersistenceError("row " + std::to_string(i) + ": " + problem);
}

PersistedSession load_session(std::string_view session_id, std::optional<fs::path> path) {
    fs::path target = path ? *path : session_file_path(session_id);
    std::error_code ec;
    if (!fs::is_regular_file(target, ec)) {
        if (!path) {
            fs::path partial = session_partial_path(session_id);
            if (fs::is_regular_file(partial, ec)) return load_file(partial, detail::canonical_uuid(session_id));
        }
        throw PersistenceError("persisted session file not found: " + target.string(), target.string());
    }
    return load_file(target, detail::canonical_uuid(session_id));
}

boost::asio::awaitable<PersistedSession> async_load_session(std::string session_id, std::optional<fs::path> path) {
    auto& rt = async::Runtime::default_runtime();
    auto job = [id = std::move(session_id), p = std::move(path)] { return load_session(id, p); };
    co_return co_await rath::async::Runtime::async_blocking(rt.blocking_executor(), std::move(job));
}

namespace {

// session.md §5.5: an `opensandbox` header with a registry id re-attaches to the
// remote sandbox it names. A sandbox that is gone (expired, deleted, server
// unreachable) leaves the session unbound, to open a fresh one on first use, with a
// warning: the conversation still loads.
void reattach_sandbox(Session& s, const PersistedSessionHeader& h) {
    if (h.sandbox_backend != std::optional<std::string>("opensandbox") || !h.sandbox_handle_id) return;
    auto id = detail::canonical_uuid(*h.sandbox_handle_id);
    if (!id) return;
    try {
        s.bind_sandbox(backend::persistence::reattach_remote(*id));
    } catch (const std::exception& e) {
        rath::log(LogLevel::warning, "rath.session.persistence",
                  "session " + h.id + ": sandbox " + *id + " could not be re-attached (" + e.what() +
                      "); a new sandbox opens on first use");
    }
}

}  // namespace

Session PersistedSession::to_session() const {
    check_tool_order(chunks);
    SessionOptions o;
    o.id = header.id;
    o.sandbox_backend = header.sandbox_backend;
    o.sandbox_spec = header.sandbox_spec;
    o.lineage = Lineage{header.parent_session_ids, header.lineage_operator, header.lineage_kind, header.lineage_extras};
    o.usage = usage;
    Session s(chunks, std::move(o));
    reattach_sandbox(s, header);
    return s;
}

std::pair<Session, Session> PersistedSession::to_resumable_pair(std::optional<std::string> agent_prompt) const {
    check_tool_order(chunks);
    SessionOptions o;
    o.sandbox_backend = header.sandbox_backend;
    o.sandbox_spec = header.sandbox_spec;
    Session user(chunks, std::move(o));
    reattach_sandbox(user, header);
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

// The same checks as loading: a file that would not load is not listed.
PersistedSessionMeta scan_meta(const fs::path& path) {
    PersistedSession p = load_file(path, std::nullopt);
    PersistedSessionMeta m;
    m.id = p.header.id;
    m.path = p.path;
    m.created_at = p.header.created_at;
    m.created_at_time = p.header.created_at_time;
    m.lineage_operator = p.header.lineage_operator;
    m.lineage_kind = p.header.lineage_kind;
    m.chunk_count = p.chunks.size();
    m.closed = p.closed;
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
        if (is_recording_path(e.path())) continue;  // a model-call recording, not a transcript
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
    fs::remove(recording_path_for(target), ec);  // its recording goes with it
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
