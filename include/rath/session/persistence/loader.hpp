#pragma once
// Loading persisted sessions back (session.md §5.5): the loader, listing, deletion and
// pruning. A final line without "\n" (a crash mid-write) is dropped, so a file without
// a trailer loads up to its last complete row; anything else that is wrong is a
// PersistenceError naming the file and line. Checked beyond the JSON syntax: one
// header, first, whose id is the one the file name (<uuid>.jsonl[.__partial__]) or the
// caller asked for; chunk indices 0, 1, 2, ... with none missing, repeated or out of
// order; payloads of the types their kind needs (session.md §1.2); every tool result
// after the assistant row that made its call, and answering it once; at most one
// trailer, the last record, whose final_chunk_count is the number of chunks.
//
// Thread safety: the functions may run from any thread at once; the sync ones block on
// file I/O (async_load_session runs on the blocking pool and is not cancellable once
// started). A file being written is read as far as its last complete record.
#include <rath/session.hpp>
#include <rath/session/persistence/records.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::persistence {

struct PersistedSession {
    PersistedSessionHeader header;
    ChunkTable chunks;
    std::optional<TokenUsage> usage;  // the trailer's, unset without trailer
    bool closed = false;              // a trailer was seen
    std::filesystem::path path;       // canonical
    std::optional<boost::json::object> trailer;

    // Both throw PersistenceError when `chunks` (a public member, so possibly edited
    // since loading) has a tool result before its call (see check_tool_order).
    // Resume: the session as it was written — same id, rows, usage, lineage, target
    // backend and spec (not stamped, unbound).
    [[nodiscard]] Session to_session() const;
    // session.md §5.5: a fresh unstamped user session with the rows, backend and spec,
    // and an agent session from `agent_prompt`, else from the first SYSTEM row, else
    // empty.
    [[nodiscard]] std::pair<Session, Session> to_resumable_pair(
        std::optional<std::string> agent_prompt = std::nullopt) const;
};

// Loads `path` if given, else <id>.jsonl, falling back to <id>.jsonl.__partial__.
// When `session_id` is a UUID the header must carry it.
[[nodiscard]] PersistedSession load_session(std::string_view session_id,
                                            std::optional<std::filesystem::path> path = std::nullopt);
// Loads one file.
[[nodiscard]] PersistedSession load_session_file(const std::filesystem::path& path);
// A session kept as records somewhere else (a database): header, chunks in index
// order, then the trailer if any, each one JSON text as a file line holds it. The same
// checks as a file; errors name `source` and the record's 1-based position; the
// result's path is empty.
[[nodiscard]] PersistedSession load_session_records(std::string_view source, const std::vector<std::string>& records,
                                                    std::optional<std::string> expected_id = std::nullopt);
// The same on the runtime's blocking pool.
[[nodiscard]] boost::asio::awaitable<PersistedSession> async_load_session(
    std::string session_id, std::optional<std::filesystem::path> path = std::nullopt);

// Throws PersistenceError("row <i>: tool_result for call '<id>' comes before (or
// without) its tool call") — or "answers it a second time" — for a transcript a
// provider would reject.
void check_tool_order(const ChunkTable& rows);

struct PersistedSessionMeta {
    std::string id;
    std::filesystem::path path;
    std::string created_at;
    std::chrono::system_clock::time_point created_at_time;
    std::string lineage_operator;
    LineageKind lineage_kind = LineageKind::unknown;
    std::size_t chunk_count = 0;
    bool closed = false;
};

struct ListOptions {
    std::optional<std::filesystem::path> dir{};  // default: default_sessions_dir()
    // Receives one error per unreadable session file (also reported as a warning).
    std::vector<PersistenceError>* skipped = nullptr;
};
// Every *.jsonl and *.jsonl.__partial__ file but the *.llm.jsonl recordings, sorted
// by created_at (stable). A missing
// directory lists nothing; other files are not ours and are ignored; a file that would
// not load (any of the checks above) is skipped with a warning.
[[nodiscard]] std::vector<PersistedSessionMeta> list_persisted_sessions(const ListOptions& options = {});
// Deletes the target file (and, without `path`, the partial) and the model-call
// recording beside it (paths.hpp); true if the transcript or its partial went.
bool delete_session(std::string_view session_id, std::optional<std::filesystem::path> path = std::nullopt);
// Deletes every listed file created before now - older_than; returns the ids removed.
std::vector<std::string> prune_sessions(std::chrono::system_clock::duration older_than,
                                        std::optional<std::filesystem::path> dir = std::nullopt);

}  // namespace rath::persistence
