#pragma once
// The process-wide session registry (session.md §1.10): every session the loop
// produced or consumed, by id, plus the active one.
//
// Deviation: entries are weak references. Upstream keeps every session for the life
// of the process, which in a service that runs millions of sessions is a leak of
// every transcript; here an entry resolves while anything else holds the session
// (the caller, a later loop, a lineage Journal that recorded it) and dead entries
// are pruned as the registry grows.
#include <rath/session.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rath {

class SessionRegistry {
public:
    void register_session(const Session& s);
    // The session if it is registered and still alive.
    std::optional<Session> get(std::string_view id) const;
    void set_active(const std::optional<Session>& s);
    std::optional<std::string> active_id() const;
    // Live registered sessions in registration order (a lineage graph).
    std::vector<Session> sessions() const;
    // Number of live registered sessions.
    std::size_t size() const;
    void clear();

private:
    struct Entry {
        std::string id;
        WeakSession session;
    };
    void prune_locked();

    mutable std::mutex mu_;
    // A deque: appending never moves an entry, so the index can key on views of the
    // entries' own ids instead of a second copy of each (rebuilt after a prune).
    std::deque<Entry> order_;
    std::unordered_map<std::string_view, std::size_t> index_;
    std::optional<std::string> active_;
    std::size_t prune_at_ = 1024;
};

SessionRegistry& session_registry();

}  // namespace rath
