#pragma once
// SessionWriter (session.md §5.3): the synchronous, append-only JSONL writer of one
// session. The file is <id>.jsonl.__partial__ while open (the write-ahead log), locked
// with an exclusive flock; every record is one write(2) of a full line, so a record
// whose write returned survives a crash of the process. close() writes the trailer
// and atomically renames the partial file to <id>.jsonl; abandon() leaves the partial.
//
// Thread safety: none; one thread at a time per writer (AsyncSessionWriter is the one
// to share). Every call blocks on file I/O, so coroutines use AsyncSessionWriter.
// Errors: PersistenceError naming the file, for every I/O failure and misuse.
#include <rath/session.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace rath::persistence {

struct WriterOptions {
    // Final path (the partial goes next to it); default <sessions>/<id>.jsonl. A
    // template: "{session_id}" is replaced by the session's id, and a directory (existing,
    // or written with a trailing separator) holds <id>.jsonl — see persist_path_for.
    std::optional<std::filesystem::path> path{};
    // Sandbox-registry id written to the header for reattach.
    std::optional<std::string> sandbox_handle_id{};
    // fdatasync after every record (survives power loss, not only process death).
    bool sync_each_record = false;
    // Also open the model-call recording beside the file (recording_path_for, replaced
    // when it exists) for write_recording: one line per record, no partial name (a
    // crash leaves the lines written so far).
    bool record_llm = false;
    // The header's created_at and the trailer's closed_at instead of the clock's time
    // when each is written (ISO-8601 UTC, as iso_utc_now writes it; not validated): a
    // replay reproducing a recorded run's file.
    std::optional<std::string> created_at{};
    std::optional<std::string> closed_at{};
};

class SessionWriter {
public:
    // Opens and locks the partial file and writes the header. A partial that no writer
    // holds (a crashed or abandoned one) is started over: a second header would make it
    // unloadable. Throws PersistenceError when another writer holds the file ("another
    // process is already writing to '<partial>'; refusing to interleave appends"), or
    // on I/O errors. Within one process a final path is claimed by one open writer:
    // a second writer of the same path fails at once with "'<path>' is already being
    // written by session <id> in this process; ..." (a fixed persist path shared by
    // concurrent runs, which would otherwise replace each other's file).
    explicit SessionWriter(Session session, WriterOptions options = {});
    // Abandons (keeps the partial, no trailer) if neither closed nor abandoned.
    ~SessionWriter();
    SessionWriter(const SessionWriter&) = delete;
    SessionWriter& operator=(const SessionWriter&) = delete;

    // Appends one chunk record; `index` must be chunks_written() (rows 0, 1, 2, ... in
    // order, as the loader requires). Throws PersistenceError after close()/abandon()
    // or for another index (nothing is written).
    void write_chunk(std::size_t index, const ChunkRow& row);
    // Appends one line (a complete JSON record with its "\n") to the recording.
    // Throws PersistenceError without WriterOptions::record_llm, after close()/abandon(),
    // and on I/O errors.
    void write_recording(const std::string& line);
    // Trailer, unlock, rename partial -> final (the recording is closed too). Idempotent.
    void close();
    // Unlock and stop; the partial stays without trailer. Idempotent; no-op after close().
    void abandon() noexcept;

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return final_; }
    [[nodiscard]] const std::filesystem::path& partial_path() const noexcept { return partial_; }
    // The recording's path (empty without record_llm).
    [[nodiscard]] const std::filesystem::path& recording_path() const noexcept { return recording_; }
    [[nodiscard]] std::size_t chunks_written() const noexcept { return chunks_written_; }
    [[nodiscard]] bool closed() const noexcept { return fd_ < 0; }

private:
    void open_file();
    void write_line(const std::string& line);
    void release_fd() noexcept;
    void release_claim() noexcept;

    Session session_;
    WriterOptions options_;
    std::filesystem::path final_;
    std::filesystem::path partial_;
    int fd_ = -1;
    std::filesystem::path recording_;
    int recording_fd_ = -1;
    std::size_t chunks_written_ = 0;
    std::size_t offset_ = 0;  // file size after the last complete record
    bool finished_ = false;  // closed or abandoned
    bool claimed_ = false;   // final_ is in the process-wide table of open paths
};

// Scope guard: close() on normal exit, abandon() when leaving by an exception.
class SessionWriterGuard {
public:
    explicit SessionWriterGuard(SessionWriter& w) noexcept : w_(w), exceptions_(std::uncaught_exceptions()) {}
    ~SessionWriterGuard() noexcept(false);
    SessionWriterGuard(const SessionWriterGuard&) = delete;
    SessionWriterGuard& operator=(const SessionWriterGuard&) = delete;

private:
    SessionWriter& w_;
    int exceptions_;
};

}  // namespace rath::persistence
