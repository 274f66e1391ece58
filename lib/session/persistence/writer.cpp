#include <rath/session/persistence/paths.hpp>
#include <rath/session/persistence/records.hpp>
#include <rath/session/persistence/writer.hpp>

#include "lib/session/session_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace rath::persistence {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

std::string errno_text(int e) { return std::strerror(e); }

// The whole line, retried on short writes and EINTR.
void write_all(int fd, const std::string& line, const fs::path& path) {
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            throw PersistenceError("failed to write to " + quoted(path) + ": " + errno_text(e), path.string());
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

// The final paths open writers of this process hold, and whose session holds each.
// flock alone cannot name the other writer, and two runs that share a persist_path
// deserve to be told how to give each its own file.
struct OpenPaths {
    std::mutex mu;
    std::map<fs::path, std::string> held;
};

OpenPaths& open_paths() {
    static OpenPaths p;
    return p;
}

constexpr const char* own_file_hint =
    "put {session_id} in the path or name a directory, so that each run writes its own file";

}  // namespace

SessionWriter::SessionWriter(Session session, WriterOptions options)
    : session_(std::move(session)), options_(std::move(options)) {
    if (options_.path) {
        final_ = fs::weakly_canonical(fs::absolute(persist_path_for(*options_.path, session_.id())));
        partial_ = partial_path_for(final_);
    } else {
        final_ = session_file_path(session_.id());
        partial_ = session_partial_path(session_.id());
    }
    {
        auto& open = open_paths();
        std::lock_guard lk(open.mu);
        auto [it, fresh] = open.held.emplace(final_, session_.id());
        if (!fresh)
            throw PersistenceError(quoted(final_) + " is already being written by session " + it->second +
                                       " in this process; " + own_file_hint,
                                   final_.string());
        claimed_ = true;
    }
    // From here every failure releases the claim (the destructor does not run).
    try {
        open_file();
    } catch (...) {
        release_claim();
        throw;
    }
}

void SessionWriter::open_file() {
    std::error_code ec;
    fs::create_directories(partial_.parent_path(), ec);
    if (ec)
        throw PersistenceError("cannot create directory " + quoted(partial_.parent_path()) + ": " + ec.message(),
                               partial_.parent_path().string());
    ensure_sessions_dir();

    bool existed = fs::exists(partial_, ec);
    int fd = ::open(partial_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        throw PersistenceError("cannot open " + quoted(partial_) + " for appending: " + errno_text(e),
                               partial_.string());
    }
    // flock (per open file description), not fcntl: two writers in one process must
    // conflict too.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        throw PersistenceError("another process is already writing to " + quoted(partial_) +
                                   "; refusing to interleave appends (" + own_file_hint + ")",
                               partial_.string());
    }
    fd_ = fd;
    if (existed) {
        // A partial nobody holds is a crashed or abandoned writer of this session. A
        // second header would make it unloadable: the new writer starts it over.
        if (::ftruncate(fd_, 0) != 0) {
            int e = errno;
            release_fd();
            finished_ = true;
            throw PersistenceError("cannot truncate stale partial " + quoted(partial_) + ": " + errno_text(e),
                                   partial_.string());
        }
    } else {
        (void)::fchmod(fd_, 0600);
    }
    try {
        write_line(record_line(make_header_record(session_, options_.sandbox_handle_id, options_.created_at ? *options_.created_at : iso_utc_now())));
        if (options_.record_llm) {
            recording_ = recording_path_for(final_);
            recording_fd_ = ::open(recording_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
            if (recording_fd_ < 0) {
                int e = errno;
                throw PersistenceError("cannot open " + quoted(recording_) + " for writing: " + errno_text(e),
                                       recording_.string());
            }
        }
    } catch (...) {
        release_fd();
        finished_ = true;
        throw;
    }
}

SessionWriter::~SessionWriter() { abandon(); }

void SessionWriter::write_line(const std::string& line) {
    // One write(2) per record in the common case: once it returns, the record is in
    // the kernel and survives the death of this process.
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            // Never leave a torn record in the middle of the file: cut back to the
            // last complete one, so later records stay loadable.
            if (p != line.data()) (void)::ftruncate(fd_, static_cast<off_t>(offset_));
            throw PersistenceError("failed to write to " + quoted(partial_) + ": " + errno_text(e),
                                   partial_.string());
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    offset_ += line.size();
    if (options_.sync_each_record && ::fdatasync(fd_) != 0) {
        int e = errno;
        throw PersistenceError("fdatasync of " + quoted(partial_) + " failed: " + errno_text(e), partial_.string());
    }
}

void SessionWriter::write_chunk(std::size_t index, const ChunkRow& row) {
    if (finished_ || fd_ < 0)
        throw PersistenceError("SessionWriter(" + final_.string() + ") is closed; cannot append more chunks",
                               final_.string());
    // The loader takes chunks 0, 1, 2, ... only: a file it would refuse is never written.
    if (index != chunks_written_)
        throw PersistenceError("SessionWriter(" + final_.string() + "): chunk index " + std::to_string(index) +
                                   " where " + std::to_string(chunks_written_) + " was expected",
                               final_.string());
    write_line(record_line(make_chunk_record(index, row)));
    ++chunks_written_;
}

void SessionWriter::write_recording(const std::string& line) {
    if (!options_.record_llm)
        throw PersistenceError("SessionWriter(" + final_.string() + ") was opened without record_llm", final_.string());
    if (finished_ || recording_fd_ < 0)
        throw PersistenceError("SessionWriter(" + final_.string() + ") is closed; cannot append to its recording",
                               recording_.string());
    write_all(recording_fd_, line, recording_);
}

void SessionWriter::release_fd() noexcept {
    if (recording_fd_ >= 0) {
        ::close(recording_fd_);
        recording_fd_ = -1;
    }
    if (fd_ < 0) return;
    (void)::flock(fd_, LOCK_UN);
    ::close(fd_);
    fd_ = -1;
}

void SessionWriter::release_claim() noexcept {
    if (!claimed_) return;
    claimed_ = false;
    auto& open = open_paths();
    std::lock_guard lk(open.mu);
    open.held.erase(final_);
}

void SessionWriter::close() {
    if (finished_) return;
    finished_ = true;
    // The claim outlives the rename: a writer of the same path that started in
    // between would truncate the partial this one is about to promote.
    struct ReleaseClaim {
        SessionWriter* w;
        ~ReleaseClaim() { w->release_claim(); }
    } release{this};
    try {
        write_line(record_line(make_trailer_record(options_.closed_at ? *options_.closed_at : iso_utc_now(), chunks_written_, detail::SessionAccess::raw_usage(session_))));
        if (!options_.sync_each_record) (void)::fdatasync(fd_);
    } catch (...) {
        release_fd();
        throw;
    }
    release_fd();
    if (::rename(partial_.c_str(), final_.c_str()) != 0 && errno != ENOENT) {
        int e = errno;
        throw PersistenceError("cannot rename " + quoted(partial_) + " to " + quoted(final_) + ": " + errno_text(e),
                               partial_.string());
    }
    if (options_.sync_each_record) {
        int dfd = ::open(final_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)::fsync(dfd);
            ::close(dfd);
        }
    }
}

void SessionWriter::abandon() noexcept {
    if (finished_) return;
    finished_ = true;
    release_fd();
    release_claim();
}

SessionWriterGuard::~SessionWriterGuard() noexcept(false) {
    if (std::uncaught_exceptions() > exceptions_)
        w_.abandon();
    else
        w_.close();
}

}  // namespace rath::persistence
