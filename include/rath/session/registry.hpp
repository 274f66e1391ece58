#pragma once
// The process-wide session registry (session.md §1.10): every session the loop
// produced or consumed, by id, plus the active one.
//
// Deviation: entries are weak references. Upstream keeps every session for the life
// of the process, which in a service that runs millions of sessions is a leak of
// every transcript; here an entry resolves while anything else holds the session
// (the caller, a later loop, a lineage Journal that recorded it), and a session
// leaves the registry when it is destroyed. An entry holds no copy of the id: it is
// found by the id's hash and compared against the session's own id string, and the
// session removes it before it goes.
//
// Thread safety: every member function may be called from any thread at once (one
// mutex; sessions register and leave from whatever thread creates or drops them).
// Errors: none but std::bad_alloc.
#include <rath/session.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath {

class SessionRegistry {
public:
    void register_session(const Session& s);
    // The session if it is registered and still alive.
    [[nodiscard]] std::optional<Session> get(std::string_view id) const;
    void set_active(const std::optional<Session>& s);
    [[nodiscard]] std::optional<std::string> active_id() const;
    // Live registered sessions in registration order (a lineage graph).
    [[nodiscard]] std::vector<Session> sessions() const;
    // Number of live registered sessions.
    [[nodiscard]] std::size_t size() const;
    // Slots of the table (live, dead and free): it shrinks back to 64 when a fan-out's
    // entries are gone. For tests and metrics.
    [[nodiscard]] std::size_t capacity() const;
    void clear();

private:
    friend struct detail::SessionState;
    friend SessionRegistry& session_registry();
    SessionRegistry() = default;
    // A registered session's state is being destroyed: its entry goes (unless another
    // session with the same id has taken it since).
    void forget(const detail::SessionState* state, std::string_view id) noexcept;

    // One slot of an open-addressing table (linear probing): with every waiting session
    // of a large fan-out registered, a node-based map would cost an allocation per entry
    // and several cache misses per insert and erase; a slot costs neither, and erasing by
    // state compares pointers, not ids.
    struct Slot {
        std::size_t hash = 0;  // of the state's id
        detail::SessionState* state = nullptr;  // null: empty, or a tombstone if seq == tomb
        std::uint64_t seq = 0;  // registration order
        WeakSession session{};
        bool is_tomb() const noexcept { return !state && seq == tomb; }
        bool is_empty() const noexcept { return !state && seq != tomb; }
    };
    static constexpr std::uint64_t tomb = ~std::uint64_t{0};
    // Index of the first live entry on `hash`'s probe run that `match` accepts, or npos
    // (under mu_).
    template <class Match>
    std::size_t probe(std::size_t hash, Match match) const noexcept;
    // Index of the entry for `id`, or npos (under mu_).
    std::size_t find(std::string_view id, std::size_t hash) const noexcept;
    void insert(Slot slot);
    void erase_at(std::size_t i) noexcept;
    // Rebuilds the table for the live entries (at most half full), tombstones dropped.
    void rebuild();

    mutable std::mutex mu_;
    std::vector<Slot> slots_;  // empty, or a power of two long
    std::size_t used_ = 0;     // live slots
    std::size_t tombs_ = 0;
    std::uint64_t next_seq_ = 0;
    std::optional<std::string> active_;
    // Bumped by clear(): a state marked with the current epoch is known to be in the map.
    std::atomic<std::uint64_t> epoch_{1};
};

// The process-wide registry (never destroyed, so that sessions outliving static
// destruction can still leave it).
[[nodiscard]] SessionRegistry& session_registry();

}  // namespace rath
