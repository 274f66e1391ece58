#pragma once
// SessionScope: `with session:` (session.md §1.6). The outermost scope opens the
// session's sandbox (lazily, through its backend target) and closes the session's
// handle on exit; nested scopes only count.
#include <rath/session.hpp>

namespace rath {

class SessionScope {
public:
    explicit SessionScope(Session session) : session_(std::move(session)) { session_.enter(); }
    ~SessionScope() { session_.exit_noexcept(); }
    SessionScope(const SessionScope&) = delete;
    SessionScope& operator=(const SessionScope&) = delete;

    Session& session() noexcept { return session_; }

private:
    Session session_;
};

}  // namespace rath
