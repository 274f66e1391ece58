#pragma once
// Session: the value that flows through rath (session.md §1). A Session is a handle,
// like a tensor: copies are O(1) and refer to the same session (same id). It carries
// an immutable, structurally shared transcript (ChunkTable), cumulative token usage,
// lineage fields, and a slot for a sandbox binding with a domain refcount.
//
// A session may be *pending*: an agent loop is still producing it. Lineage, id and
// sandbox fields are readable at once; the transcript and usage wait for the loop
// (or, inside a tool dispatch, show the transcript as it grows).
#include <rath/async/lazy.hpp>
#include <rath/backend/backend.hpp>
#include <rath/backend/spec.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/chunk_table.hpp>
#include <rath/session/error.hpp>
#include <rath/session/lineage.hpp>
#include <rath/session/usage.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath {

namespace async {
class Runtime;
}

class Session;

namespace detail {
struct SessionState;
// The registry's hooks (lib/session/registry.cpp): a handle's state, and the registry
// epoch it was registered in (0: not registered), which makes a destroyed state leave
// the registry and lets a registered session be registered again without a lookup.
SessionState* state_of(const Session& s) noexcept;
std::atomic<std::uint64_t>& registered_epoch(SessionState& st) noexcept;
std::string_view id_of(const SessionState& st) noexcept;
// For the loop and compress operators, right after stamping a two-parent lineage: the
// session's legacy provenance is that lineage's parents and operator, read from there
// (no copy of the ids) until the lineage is replaced.
void keep_legacy_in_lineage(const Session& s);
}  // namespace detail

// What a pending session becomes when its loop finishes.
struct MaterializedSession {
    ChunkTable chunks{};
    std::optional<TokenUsage> usage{};
};

// Constructor options (all optional; designated initializers).
struct SessionOptions {
    std::optional<std::string> id{};  // default: a fresh random UUID
    std::optional<std::string> sandbox_backend{};
    std::optional<backend::SandboxSpec> sandbox_spec{};
    Lineage lineage{};
    std::optional<SessionLineage> legacy_lineage{};
    std::optional<TokenUsage> usage{};
};

class Session {
public:
    // An empty transcript with a fresh id.
    Session();
    explicit Session(ChunkTable chunks, SessionOptions options = {});

    // One USER row / one SYSTEM row; no lineage stamp.
    static Session from_user_message(std::string text);
    static Session from_agent_prompt(std::string text);
    // kind "user" | "system" (stamped leaf_user / leaf_system) | "empty" (no rows, no
    // stamp). Any other kind throws SessionError.
    static Session create(std::string_view kind = "user", std::string text = {});

    // A pending session: `seed` is visible raw at once; `result` materializes it.
    static Session make_pending(ChunkTable seed, SessionOptions options, async::Lazy<MaterializedSession> result);
    // Installs an in-flight materialization on an existing session.
    void set_pending(async::Lazy<MaterializedSession> result) const;
    // True until synchronize() has consumed the result (or its error).
    bool pending() const noexcept;

    const std::string& id() const noexcept;

    // ---- transcript and usage (lazy-gated, session.md §1.7) ----
    // Off the runtime: waits for a pending session. Inside a ToolDispatchScope: the
    // raw in-flight value. On a runtime thread otherwise: throws
    // rath::async::DeadlockError unless the result is ready.
    ChunkTable chunks() const;
    std::optional<TokenUsage> usage() const;
    // Content of the last ASSISTANT row with non-blank content, or nullopt.
    std::optional<std::string> text() const;
    // Waits for a pending session and publishes its result. Its error is thrown
    // exactly once; afterwards the session reads as whatever the loop had written.
    const Session& synchronize() const;
    // The same for coroutines (never blocks a thread).
    boost::asio::awaitable<void> async_synchronize() const;
    // Calls `fn` once the session is no longer pending: at once on this thread when
    // it is not pending, else on a thread of `runtime` (default: the default runtime)
    // when its loop finishes. Reading the session inside `fn` never waits (and throws
    // the loop's error, as synchronize() does). The callback form of
    // async_synchronize, for services and fan-outs that would otherwise keep a
    // coroutine per session; `fn` may hold the session, it is released after it runs.
    void when_ready(std::function<void()> fn, async::Runtime* runtime = nullptr) const;
    boost::asio::awaitable<ChunkTable> async_chunks() const;
    boost::asio::awaitable<std::optional<TokenUsage>> async_usage() const;

    // ---- raw access for the agent loop (never waits) ----
    ChunkTable raw_chunks() const;
    void set_raw_chunks(ChunkTable chunks) const;
    std::optional<TokenUsage> raw_usage() const;
    void set_raw_usage(std::optional<TokenUsage> usage) const;
    // Thread-safe append returning the row's 0-based index. Throws SessionError on a
    // pending session (its transcript belongs to the loop).
    std::size_t append_chunk(ChunkRowPtr row) const;

    // ---- lineage (eager) ----
    Lineage lineage() const;
    std::vector<std::string> parent_session_ids() const;
    std::string lineage_operator() const;
    LineageKind lineage_kind() const;
    LineageExtras lineage_extras() const;
    // Overwrites all four lineage fields (the recorder does this when stamping).
    void set_lineage(Lineage lineage) const;
    void add_lineage_extra(std::string key, boost::json::value value) const;
    std::optional<SessionLineage> legacy_lineage() const;
    void set_legacy_lineage(std::optional<SessionLineage> l) const;

    // ---- sandbox placement (session.md §1.6) ----
    // Closes the current handle, then targets `backend` with no spec / a working
    // directory / a full spec. Opens nothing.
    Session& to(std::string backend = "local");
    Session& to(std::string backend, std::string working_dir);
    Session& to(std::string backend, backend::SandboxSpec spec);
    // Releases this session's reference (if the slot holds a live sandbox) and
    // empties the slot; the target backend and spec stay.
    Session& close_sandbox();
    // Binds `sb` (+1 refcount) after releasing the previous one; binding the same
    // sandbox again changes nothing.
    Session& bind_sandbox(backend::SandboxPtr sb);
    // The bound sandbox, opening one through the target backend on first use. Two
    // concurrent callers share one open. Throws SessionError when the slot holds a
    // closed sandbox or there is no target.
    backend::SandboxPtr require_sandbox() const;
    boost::asio::awaitable<backend::SandboxPtr> async_require_sandbox() const;
    // The slot as is (may be null or closed).
    backend::SandboxPtr sandbox() const;
    std::optional<std::string> sandbox_backend() const;
    std::optional<backend::SandboxSpec> sandbox_spec() const;
    // `with session:` — prefer SessionScope. enter() opens at depth 0; exit() closes
    // at depth 0.
    void enter() const;
    void exit() const;
    void exit_noexcept() const noexcept;
    int scope_depth() const noexcept;

    // ---- graph operators (session.md §1.8) ----
    // Same rows (shared, O(1)), same target, shares a live sandbox; usage unset;
    // parents (self).
    Session fork() const;
    // As fork, but no parents.
    Session detach() const;
    // self rows + other rows, summed usage, self's sandbox; parents (self, other).
    Session merge(const Session& other) const;

    // Python repr (session.md §1.9); never waits.
    std::string repr() const;

    // Identity: both handles refer to the same session.
    bool operator==(const Session& o) const noexcept { return st_ == o.st_; }

private:
    friend class WeakSession;
    friend detail::SessionState* detail::state_of(const Session& s) noexcept;
    friend void detail::keep_legacy_in_lineage(const Session& s);
    explicit Session(std::shared_ptr<detail::SessionState> st) : st_(std::move(st)) {}
    backend::SandboxPtr ensure_sandbox() const;
    boost::asio::awaitable<backend::SandboxPtr> async_ensure_sandbox() const;
    Session derive(ChunkTable rows, std::optional<TokenUsage> usage) const;

    std::shared_ptr<detail::SessionState> st_;
};

// A non-owning reference to a session: it does not keep the transcript alive.
class WeakSession {
public:
    WeakSession() = default;
    explicit WeakSession(const Session& s) : st_(s.st_) {}
    std::optional<Session> lock() const {
        if (auto st = st_.lock()) return Session(std::move(st));
        return std::nullopt;
    }
    bool expired() const noexcept { return st_.expired(); }

private:
    std::weak_ptr<detail::SessionState> st_;
};

std::ostream& operator<<(std::ostream& os, const Session& s);

// Module helpers (session.md §1.5): stamped leaves and the operators as functions.
Session create_user_session(std::string message);
Session create_system_session(std::string prompt);
inline Session fork_session(const Session& s) { return s.fork(); }
inline Session detach_session(const Session& s) { return s.detach(); }

}  // namespace rath
