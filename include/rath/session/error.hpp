#pragma once
// Errors raised by the session layer (session.md §1, §4, §5). Messages follow the spec
// text; PersistenceError also carries the file and line it is about.
#include <rath/error.hpp>

#include <cstddef>
#include <string>

namespace rath {

// Invalid use of a session (Python's ValueError / RuntimeError in rath.session):
// unknown create kind, merging unbound sessions on different backends, a closed
// sandbox, no sandbox backend, appending to a pending session.
class SessionError : public Error {
public:
    using Error::Error;
};

// The lineage graph is inconsistent: unknown ids, missing parents, cycles.
class LineageConsistencyError : public SessionError {
public:
    using SessionError::SessionError;
};

// Persisted session files: missing, unreadable, corrupt, locked, wrong schema.
class PersistenceError : public SessionError {
public:
    explicit PersistenceError(const std::string& message, std::string path = {}, std::size_t line = 0)
        : SessionError(message), path_(std::move(path)), line_(line) {}
    // The file the error is about ("" when none), and its 1-based line (0 = whole file).
    const std::string& path() const noexcept { return path_; }
    std::size_t line() const noexcept { return line_; }

private:
    std::string path_;
    std::size_t line_;
};

}  // namespace rath
