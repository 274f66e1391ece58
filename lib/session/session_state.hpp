#pragma once
// Private: what a Session handle points at, and the accessor through which the rest of
// the library (the loop, compress, the registry, persistence, tool dispatch) reaches
// what users do not: a pending session's production, raw reads that never wait, the
// registry's hooks, the legacy provenance.
#include <rath/async/lazy.hpp>
#include <rath/backend/backend.hpp>
#include <rath/session.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace rath::detail {

// A pending session's completion: set (or failed) once by whoever produces the
// session; synchronize() consumes it.
struct PendingResult {
    async::Lazy<void> done;
    bool consumed = false;  // guarded by SessionState::mu
    // Serializes synchronize() callers. Here rather than in every session: only a
    // pending session needs it.
    std::mutex sync_mu;
};

// Where a session runs its tools. Most sessions have no placement at all, so it is
// allocated on first use instead of taking ~90 B in every session.
struct Placement {
    backend::SandboxPtr sandbox;
    std::optional<std::string> backend_name;
    // Shared and immutable: derived sessions point at their parent's spec.
    std::shared_ptr<const backend::SandboxSpec> spec;
    // An open in progress: concurrent require_sandbox() calls wait for it instead of
    // opening a second sandbox (session.md §10.2 pitfall 5).
    std::optional<async::Lazy<backend::SandboxPtr>> opening;

    // Targets the backend and spec of `sb` (without binding it).
    void target(const backend::Sandbox& sb) {
        backend_name = std::string(sb.backend_name());
        spec = std::make_shared<const backend::SandboxSpec>(sb.spec());
    }
};

struct SessionState {
    explicit SessionState(std::string id_) : id(std::move(id_)) {}
    ~SessionState();

    const std::string id;
    // The registry epoch this state was registered in (0: none). Its entry views `id`,
    // so a registered state leaves the registry before it goes.
    std::atomic<std::uint64_t> registry_epoch{0};

    // The producer of a pending session writes the transcript and usage from io
    // threads while other threads read them (session.md §10.2 pitfall 6): all under mu.
    // They are the one published copy: a finished loop leaves its result here.
    mutable std::mutex mu;
    ChunkTable chunks;
    std::unique_ptr<TokenUsage> usage;             // by pointer: only outputs carry usage
    Lineage lineage;
    std::unique_ptr<const SessionLineage> legacy;  // loop outputs only: not inline in every session
    // A loop output's legacy provenance is its lineage's two parents and operator: kept
    // there instead of in a copy, until the lineage is replaced.
    bool legacy_in_lineage = false;
    SessionLineage legacy_from_lineage() const {
        return SessionLineage{lineage.parent_session_ids[0], lineage.parent_session_ids[1], lineage.op};
    }
    std::unique_ptr<Placement> place;
    // Session::to(Provider): immutable, shared by the forks (a pointer, so an unbound
    // session pays one word).
    std::shared_ptr<const llm::Provider> provider;
    int depth = 0;
    std::shared_ptr<PendingResult> pending;

    // Cleared only after the producer finished (pitfall 7): a reader that sees false
    // also sees the final transcript.
    std::atomic<bool> has_pending{false};

    // Callers hold mu.
    const Placement& placed() const;
    Placement& placement() {
        if (!place) place = std::make_unique<Placement>();
        return *place;
    }
    std::optional<TokenUsage> get_usage() const { return usage ? std::optional<TokenUsage>(*usage) : std::nullopt; }
    void set_usage(const std::optional<TokenUsage>& u) {
        if (!u)
            usage.reset();
        else if (usage)
            *usage = *u;  // a loop updates it every round: no new block
        else
            usage = std::make_unique<TokenUsage>(*u);
    }
};

struct SessionAccess {
    static SessionState& state(const Session& s) noexcept { return *s.st_; }
    static Session from_state(std::shared_ptr<SessionState> st) { return Session(std::move(st)); }

    // ---- a pending session's producer (the loop, compress) ----
    // Marks `s` pending until `done` is set: its transcript and usage reads then wait
    // (or, through a dispatch view, return what was published so far).
    static void set_pending(const Session& s, async::Lazy<void> done);
    // Replaces the published transcript (a new table object per call: session.md §2.8)
    // and usage.
    static void publish(const Session& s, ChunkTable rows, const std::optional<TokenUsage>& usage);
    static void publish_usage(const Session& s, const std::optional<TokenUsage>& usage);

    // ---- reads that never wait ----
    static ChunkTable raw_chunks(const Session& s);
    static std::optional<TokenUsage> raw_usage(const Session& s);

    // The handle a tool is given: reading the transcript through it (or its copies)
    // never waits for the session's producer, which is waiting for the tool
    // (session.md §2.8).
    static Session dispatch_view(const Session& s) {
        Session v(s.st_);
        v.dispatch_view_ = true;
        v.call_ = s.call_;
        return v;
    }
    // The handle of one tool call of a run (rath/tool/tool_event.hpp): `s` whose reports
    // go to `scope`.
    static Session for_tool_call(const Session& s, std::shared_ptr<ToolCallScope> scope) {
        Session v = s;
        v.call_ = std::move(scope);
        return v;
    }
    static ToolCallScope* tool_call_scope(const Session& s) noexcept { return s.call_.get(); }

    // ---- provenance kept beside the lineage ----
    static void set_legacy_lineage(const Session& s, std::optional<SessionLineage> l);
    // Right after an operator stamped its two-parent lineage: the legacy provenance is
    // that lineage's parents and operator, read from there until it is replaced.
    static void keep_legacy_in_lineage(const Session& s);
};

}  // namespace rath::detail
