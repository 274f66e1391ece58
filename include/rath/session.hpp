#pragma once
// Session: the value that flows through rath (session.md §1). A Session is a handle,
// like a tensor: copies are O(1) and refer to the same session (same id). It carries
// an immutable, structurally shared transcript (ChunkTable), cumulative token usage,
// lineage fields, and a slot for a sandbox binding with a domain refcount.
//
// A session may be *pending*: an agent loop (or another operator) is still producing
// it. Its id, lineage and sandbox are readable at once; its transcript and usage wait
// for the producer. The handle a tool is given while the loop that called it runs is a
// *dispatch view*: reading the transcript through it never waits and returns the rows
// published so far (session.md §2.8), whatever thread or coroutine the tool runs on.
//
// Thread safety: every member function may be called from any thread on handles to the
// same session at once; each read is a consistent snapshot. Blocking reads (chunks(),
// usage(), text(), synchronize(), require_sandbox()) must not run on a runtime io
// thread while they would wait: they throw async::DeadlockError there instead of
// hanging; coroutines use the async_ forms.
//
// Errors: SessionError for misuse (no backend to open, append to a pending session);
// the producer's error is rethrown exactly once, by the first read that waits for it,
// and the session then reads as what was published before the failure.
#include <rath/backend/fwd.hpp>
#include <rath/backend/spec.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/chunk_table.hpp>
#include <rath/session/error.hpp>
#include <rath/session/lineage.hpp>
#include <rath/session/usage.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
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

namespace llm {
struct Provider;  // rath/llm/provider.hpp
}

namespace detail {
struct SessionState;
struct SessionAccess;
struct ToolCallScope;
}  // namespace detail

// Constructor options (all optional; designated initializers).
struct SessionOptions {
    std::optional<std::string> id{};  // default: a fresh random UUID
    std::optional<std::string> sandbox_backend{};
    std::optional<backend::SandboxSpec> sandbox_spec{};
    Lineage lineage{};
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

    // True until the producer's result (or error) has been consumed by a read.
    [[nodiscard]] bool pending() const noexcept;
    // True for the handle a tool was given (and its copies): see the file comment.
    [[nodiscard]] bool dispatch_view() const noexcept { return dispatch_view_; }

    [[nodiscard]] const std::string& id() const noexcept;

    // ---- transcript and usage (lazy-gated, session.md §1.7) ----
    // Wait for a pending session (see the file comment for threads and dispatch views).
    [[nodiscard]] ChunkTable chunks() const;
    [[nodiscard]] std::optional<TokenUsage> usage() const;
    // Content of the last ASSISTANT row with non-blank content, or nullopt.
    [[nodiscard]] std::optional<std::string> text() const;
    // Waits for a pending session to finish. Its error is thrown exactly once; the
    // session then reads as what its producer published. A no-op on a dispatch view.
    const Session& synchronize() const;
    // The same for coroutines: never blocks a thread. Cancellation (the awaiting
    // coroutine's slot) abandons the wait; the session stays pending.
    [[nodiscard]] boost::asio::awaitable<void> async_synchronize() const;
    // Calls `fn` once the session is no longer pending: at once on this thread when it
    // is not pending, else on a thread of `runtime` (default: the default runtime) when
    // its producer finishes. Reading the session inside `fn` never waits (and throws the
    // producer's error, as synchronize() does). The callback form of
    // async_synchronize, for services and fan-outs that would otherwise keep a
    // coroutine per session; `fn` may hold the session, it is released after it runs.
    void when_ready(std::function<void()> fn, async::Runtime* runtime = nullptr) const;
    // Asks the producer of a pending session (an agent loop) to stop: its in-flight
    // model request is aborted, its running tool processes are killed (whole process
    // group), it publishes no further rows, and a persisted run keeps its partial file
    // with the rows written so far (never a torn row; no trailer). A run still queued at
    // its admission gate never starts. The first read that waits then throws
    // rath::Cancelled with `reason`, once, and the session reads as what was published
    // before it stopped. Returns at once, without waiting for the run to unwind; false
    // when nothing is pending any more (the run finished first: nothing is cancelled).
    // Thread safety: as every member; any number of calls, the first reason wins.
    bool cancel(CancelReason reason = CancelReason::requested) const;
    [[nodiscard]] boost::asio::awaitable<ChunkTable> async_chunks() const;
    [[nodiscard]] boost::asio::awaitable<std::optional<TokenUsage>> async_usage() const;

    // Appends a row and returns its 0-based index. Throws SessionError on a pending
    // session (its transcript belongs to its producer).
    std::size_t append_chunk(ChunkRowPtr row) const;
    // Replaces the cumulative usage. Throws SessionError on a pending session.
    void set_usage(std::optional<TokenUsage> usage) const;

    // ---- lineage (eager) ----
    [[nodiscard]] Lineage lineage() const;
    [[nodiscard]] std::vector<std::string> parent_session_ids() const;
    [[nodiscard]] std::string lineage_operator() const;
    [[nodiscard]] LineageKind lineage_kind() const;
    [[nodiscard]] LineageExtras lineage_extras() const;
    // Overwrites all four lineage fields (the recorder does this when stamping).
    void set_lineage(Lineage lineage) const;
    void add_lineage_extra(std::string key, boost::json::value value) const;
    // OpenRath's older provenance triple (user id, agent id, operator) of an operator
    // output; nullopt for other sessions.
    [[nodiscard]] std::optional<SessionLineage> legacy_lineage() const;

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
    // closed sandbox or there is no target, and whatever the backend's open throws.
    backend::SandboxPtr require_sandbox() const;
    [[nodiscard]] boost::asio::awaitable<backend::SandboxPtr> async_require_sandbox() const;
    // The slot as is (may be null or closed).
    [[nodiscard]] backend::SandboxPtr sandbox() const;
    [[nodiscard]] std::optional<std::string> sandbox_backend() const;
    [[nodiscard]] std::optional<backend::SandboxSpec> sandbox_spec() const;
    // ---- provider binding (session.md §9) ----
    // The model endpoint this session's operators use when they are given none: a
    // plain value with no lifecycle. Binding never opens a sandbox, leaves the sandbox
    // target alone (as to("local", ...) leaves the provider alone), and is not written
    // to a persisted file. fork() and detach() keep it; merge() keeps this session's.
    // run_session_loop, run_session_compress and select_session use it when their own
    // provider has no field set (rath/llm/provider.hpp: provider_is_unset).
    Session& to(const llm::Provider& provider);
    // Binds the config preset `name` (llm.providers entry; Provider::from_config).
    // Throws ConfigError for a malformed file and what from_config throws for an unknown
    // name; blocks on reading the config file the first time.
    Session& to_provider(std::string_view name);
    // Unbinds the provider.
    Session& clear_provider();
    // The bound provider (immutable, shared by the forks), or null (the default).
    [[nodiscard]] std::shared_ptr<const llm::Provider> provider() const;

    // `with session:` — prefer SessionScope. enter() opens at depth 0; exit() closes
    // at depth 0.
    void enter() const;
    void exit() const;
    void exit_noexcept() const noexcept;
    [[nodiscard]] int scope_depth() const noexcept;

    // ---- graph operators (session.md §1.8) ----
    // Same rows (shared, O(1)), same target, shares a live sandbox; usage unset;
    // parents (self).
    [[nodiscard]] Session fork() const;
    // As fork, but no parents.
    [[nodiscard]] Session detach() const;
    // self rows + other rows, summed usage, self's sandbox; parents (self, other).
    [[nodiscard]] Session merge(const Session& other) const;

    // Python repr (session.md §1.9); never waits.
    [[nodiscard]] std::string repr() const;

    // Identity: both handles refer to the same session.
    bool operator==(const Session& o) const noexcept { return st_ == o.st_; }

private:
    friend class WeakSession;
    friend struct detail::SessionAccess;
    explicit Session(std::shared_ptr<detail::SessionState> st) : st_(std::move(st)) {}
    bool waits() const noexcept;
    backend::SandboxPtr ensure_sandbox() const;
    boost::asio::awaitable<backend::SandboxPtr> async_ensure_sandbox() const;
    Session derive(ChunkTable rows, std::optional<TokenUsage> usage) const;

    std::shared_ptr<detail::SessionState> st_;
    bool dispatch_view_ = false;
    // Set on the handle a loop gives one tool call: where the call's reports go
    // (rath/tool/tool_event.hpp). Null everywhere else.
    std::shared_ptr<detail::ToolCallScope> call_;
};

// A non-owning reference to a session: it does not keep the transcript alive.
class WeakSession {
public:
    WeakSession() = default;
    explicit WeakSession(const Session& s) : st_(s.st_) {}
    [[nodiscard]] std::optional<Session> lock() const {
        if (auto st = st_.lock()) return Session(std::move(st));
        return std::nullopt;
    }
    [[nodiscard]] bool expired() const noexcept { return st_.expired(); }

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
