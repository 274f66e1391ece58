#pragma once
// The process-wide session registry (session.md §1.10): every session the loop
// produced or consumed, by id, plus the active one.
//
// Deviation: entries are weak references. Upstream keeps every session for the life
// of the process, which in a service that runs millions of sessions is a leak of
// every transcript; here an entry resolves while anything else holds the session
// (the caller, a later loop, a lineage Journal that recorded it), and a session
// leaves the registry when it is destroyed. An entry is keyed by a view of the
// session's own id (no copy of it), which the session removes before it goes.
#include <rath/session.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
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
    friend struct detail::SessionState;
    friend SessionRegistry& session_registry();
    SessionRegistry() = default;
    // A registered session's state is being destroyed: its entry goes (unless another
    // session with the same id has taken it since).
    void forget(const detail::SessionState* state, std::string_view id) noexcept;

    struct Entry {
        std::uint64_t seq;  // registration order
        WeakSession session;
        detail::SessionState* state;  // whose id the key views
    };
    mutable std::mutex mu_;
    // std::hash of string_view: the map keeps each key's hash (no re-hashing of every id
    // when the table grows).
    std::unordered_map<std::string_view, Entry> entries_;
    std::uint64_t next_seq_ = 0;
    std::optional<std::string> active_;
    // Bumped by clear(): a state marked with the current epoch is known to be in the map.
    std::atomic<std::uint64_t> epoch_{1};
};

// The process-wide registry (never destroyed, so that sessions outliving static
// destruction can still leave it).
SessionRegistry& session_registry();

}  // namespace rath
