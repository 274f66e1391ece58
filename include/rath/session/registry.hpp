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
    struct Entry {
        std::uint64_t seq;  // registration order
        WeakSession session;
    };
    struct IdHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    void prune_locked();
    mutable std::mutex mu_;
    // Keyed by id, ordered by seq: a prune erases dead entries where they are instead
    // of rebuilding an index, and a registration costs one node and its key.
    std::unordered_map<std::string, Entry, IdHash, std::equal_to<>> entries_;
    std::uint64_t next_seq_ = 0;
    std::optional<std::string> active_;
    std::size_t prune_at_ = 1024;
};

SessionRegistry& session_registry();

}  // namespace rath
