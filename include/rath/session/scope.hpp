#pragma once
// SessionScope: `with session:` (session.md §1.6). The outermost scope opens the
// session's sandbox (lazily, through its backend target) and closes the session's
// handle on exit; nested scopes only count.
//
// One owner, one thread: a scope is a stack object. Errors: the constructor throws what
// opening the sandbox throws (Session::require_sandbox); the destructor never throws
// (a failed close is logged on "rath.session").
#include <rath/session.hpp>

namespace rath {

class SessionScope {
public:
    explicit SessionScope(Session session) : session_(std::move(session)) { session_.enter(); }
    ~SessionScope() { session_.exit_noexcept(); }
    SessionScope(const SessionScope&) = delete;
    SessionScope& operator=(const SessionScope&) = delete;

    [[nodiscard]] Session& session() noexcept { return session_; }

private:
    Session session_;
};

}  // namespace rath
