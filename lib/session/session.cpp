#include <rath/session.hpp>
#include <rath/async/detail/immortal.hpp>

#include <rath/async/runtime.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/backend/registry.hpp>
#include <rath/log.hpp>
#include <rath/session/format.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/registry.hpp>
#include <rath/session/tool_dispatch.hpp>

#include "lib/session/uuid.hpp"
#include "lib/text/demangle.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <mutex>
#include <ostream>
#include <typeinfo>

namespace rath {

namespace detail {

struct PendingResult {
    async::Lazy<MaterializedSession> lazy;
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
    // opening a second sandbox (pitfall 5).
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

    // Raw fields. The loop writes the transcript and usage from io threads while
    // other threads read them (session.md §10.2 pitfall 6), so everything is under mu.
    mutable std::mutex mu;
    ChunkTable chunks;
    std::unique_ptr<TokenUsage> usage;              // by pointer: only outputs carry usage
    Lineage lineage;
    std::unique_ptr<const SessionLineage> legacy;  // loop outputs only: not inline in every session
    // A loop output's legacy provenance is its lineage's two parents and operator: kept
    // there instead of in a copy, until the lineage is replaced.
    bool legacy_in_lineage = false;
    SessionLineage legacy_from_lineage() const {
        return SessionLineage{lineage.parent_session_ids[0], lineage.parent_session_ids[1], lineage.op};
    }
    std::unique_ptr<Placement> place;
    int depth = 0;
    std::shared_ptr<PendingResult> pending;

    // Cleared only after the result is published (pitfall 7): a reader that sees
    // false also sees the published transcript.
    std::atomic<bool> has_pending{false};

    // Callers hold mu.
    const Placement& placed() const {
        static const async::detail::Immortal<Placement> none;
        return place ? *place : *none;
    }
    Placement& placement() {
        if (!place) place = std::make_unique<Placement>();
        return *place;
    }
    std::optional<TokenUsage> get_usage() const { return usage ? std::optional<TokenUsage>(*usage) : std::nullopt; }
    void set_usage(std::optional<TokenUsage> u) {
        if (!u)
            usage.reset();
        else if (usage)
            *usage = std::move(*u);  // the loop updates it every round: no new block
        else
            usage = std::make_unique<TokenUsage>(std::move(*u));
    }
};

namespace {

std::string describe(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return demangled_type_name(typeid(ex)) + "(" + pyrepr(ex.what()) + ")";
    } catch (...) {
        return "unknown exception()";
    }
}

}  // namespace

SessionState* state_of(const Session& s) noexcept { return s.st_.get(); }
std::atomic<std::uint64_t>& registered_epoch(SessionState& st) noexcept { return st.registry_epoch; }
std::string_view id_of(const SessionState& st) noexcept { return st.id; }

SessionState::~SessionState() {
    if (registry_epoch.load(std::memory_order_relaxed) != 0) session_registry().forget(this, id);
    // Checked at destruction rather than on completion so that a synchronize() on
    // the next line never races the report.
    if (!pending || pending->consumed || !pending->lazy.ready() || !pending->lazy.failed()) return;
    auto e = pending->lazy.exception();  // marks it observed: the Lazy does not report it again
    rath::log(LogLevel::error, "rath.session",
              "Session " + id + " pending future raised " + describe(e) +
                  " but was never synchronize()d; the error has been dropped. Call session.synchronize() or read "
                  "session.chunks() to surface it.");
}

}  // namespace detail

using detail::Placement;
using detail::SessionState;

namespace {

const char* const kNoBackend =
    "session has no sandbox backend; call session.to(\"local\") or session.bind_sandbox(...)";

// Releases whatever the slot holds (outside the lock: release may close the sandbox).
void close_slot(SessionState& st) {
    backend::SandboxPtr old;
    {
        std::lock_guard lk(st.mu);
        if (st.place) old = std::move(st.place->sandbox);
    }
    if (old && !old->closed()) old->release();
}

std::string pyrepr_opt(const std::optional<std::string>& s) { return s ? detail::pyrepr(*s) : "None"; }

bool is_blank(std::string_view s) {
    for (unsigned char c : s)
        if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')) return false;
    return true;
}

}  // namespace

// ---------------------------------------------------------------- construction

Session::Session() : Session(ChunkTable{}) {}

Session::Session(ChunkTable chunks, SessionOptions o)
    : st_(std::make_shared<SessionState>(o.id ? std::move(*o.id) : detail::new_uuid_v4())) {
    st_->chunks = std::move(chunks);
    st_->set_usage(std::move(o.usage));
    st_->lineage = std::move(o.lineage);
    if (o.legacy_lineage) st_->legacy = std::make_unique<const SessionLineage>(std::move(*o.legacy_lineage));
    if (o.sandbox_backend || o.sandbox_spec) {
        Placement& pl = st_->placement();
        pl.backend_name = std::move(o.sandbox_backend);
        if (o.sandbox_spec) pl.spec = std::make_shared<const backend::SandboxSpec>(std::move(*o.sandbox_spec));
    }
}

Session Session::from_user_message(std::string text) { return Session(ChunkTable{user_text_chunk(std::move(text))}); }

Session Session::from_agent_prompt(std::string text) {
    return Session(ChunkTable{system_text_chunk(std::move(text))});
}

Session Session::create(std::string_view kind, std::string text) {
    if (kind == "user") {
        Session s = from_user_message(std::move(text));
        lineage::stamp_new_session(s, {}, "Session.create", LineageKind::leaf_user, {{"source", "Session.create"}});
        return s;
    }
    if (kind == "system") {
        Session s = from_agent_prompt(std::move(text));
        lineage::stamp_new_session(s, {}, "Session.create", LineageKind::leaf_system, {{"source", "Session.create"}});
        return s;
    }
    if (kind == "empty") return Session(ChunkTable{});
    throw SessionError("Session.create: unknown kind " + detail::pyrepr(kind) +
                       "; expected one of 'user', 'system', 'empty'");
}

Session create_user_session(std::string message) {
    Session s = Session::from_user_message(std::move(message));
    lineage::stamp_new_session(s, {}, "create_user_session", LineageKind::leaf_user,
                               {{"source", "create_user_session"}});
    return s;
}

Session create_system_session(std::string prompt) {
    Session s = Session::from_agent_prompt(std::move(prompt));
    lineage::stamp_new_session(s, {}, "create_system_session", LineageKind::leaf_system,
                               {{"source", "create_system_session"}});
    return s;
}

Session Session::make_pending(ChunkTable seed, SessionOptions options, async::Lazy<MaterializedSession> result) {
    Session s(std::move(seed), std::move(options));
    s.set_pending(std::move(result));
    return s;
}

void Session::set_pending(async::Lazy<MaterializedSession> result) const {
    std::lock_guard lk(st_->mu);
    auto p = std::make_shared<detail::PendingResult>();
    p->lazy = std::move(result);
    st_->pending = std::move(p);
    st_->has_pending.store(true, std::memory_order_release);
}

bool Session::pending() const noexcept { return st_->has_pending.load(std::memory_order_acquire); }

const std::string& Session::id() const noexcept { return st_->id; }

// ---------------------------------------------------------------- lazy gate

const Session& Session::synchronize() const {
    if (!st_->has_pending.load(std::memory_order_acquire)) return *this;
    std::shared_ptr<detail::PendingResult> p;
    {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p) return *this;
    // On an io thread, waiting (even for sync_mu, held by a thread that waits for this
    // very io thread) could deadlock: only a finished result may be read here.
    if (async::on_runtime_thread() && !p->lazy.ready())
        throw async::DeadlockError("Session " + st_->id +
                                   " is still being produced; reading it on a runtime thread would deadlock. "
                                   "co_await session.async_chunks() instead");
    std::lock_guard sl(p->sync_mu);
    {
        std::lock_guard lk(st_->mu);
        if (st_->pending != p) return *this;  // another thread materialized it
    }
    try {
        const MaterializedSession& m = p->lazy.get();
        std::lock_guard lk(st_->mu);
        st_->chunks = m.chunks;
        st_->set_usage(m.usage);
        p->consumed = true;
        st_->pending.reset();
        st_->has_pending.store(false, std::memory_order_release);
    } catch (const async::DeadlockError&) {
        throw;  // nothing was consumed
    } catch (...) {
        // The error surfaces exactly once; the session then reads as whatever the
        // loop had published raw.
        std::lock_guard lk(st_->mu);
        p->consumed = true;
        st_->pending.reset();
        st_->has_pending.store(false, std::memory_order_release);
        throw;
    }
    return *this;
}

boost::asio::awaitable<void> Session::async_synchronize() const {
    if (!st_->has_pending.load(std::memory_order_acquire)) co_return;
    std::shared_ptr<detail::PendingResult> p;
    {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p) co_return;
    if (!p->lazy.ready()) co_await p->lazy.async_wait(boost::asio::use_awaitable);
    synchronize();  // ready now: never waits
}

void Session::when_ready(std::function<void()> fn, async::Runtime* runtime) const {
    std::shared_ptr<detail::PendingResult> p;
    if (st_->has_pending.load(std::memory_order_acquire)) {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p || p->lazy.ready()) {
        fn();
        return;
    }
    async::Runtime& rt = runtime ? *runtime : async::Runtime::default_runtime();
    p->lazy.async_wait(boost::asio::bind_executor(rt.executor(), [fn = std::move(fn)](boost::system::error_code) { fn(); }));
}

ChunkTable Session::chunks() const {
    if (st_->has_pending.load(std::memory_order_acquire) && tool_dispatch_depth() == 0) synchronize();
    std::lock_guard lk(st_->mu);
    return st_->chunks;
}

std::optional<TokenUsage> Session::usage() const {
    if (st_->has_pending.load(std::memory_order_acquire) && tool_dispatch_depth() == 0) synchronize();
    std::lock_guard lk(st_->mu);
    return st_->get_usage();
}

boost::asio::awaitable<ChunkTable> Session::async_chunks() const {
    if (tool_dispatch_depth() == 0) co_await async_synchronize();
    co_return raw_chunks();
}

boost::asio::awaitable<std::optional<TokenUsage>> Session::async_usage() const {
    if (tool_dispatch_depth() == 0) co_await async_synchronize();
    co_return raw_usage();
}

std::optional<std::string> Session::text() const {
    ChunkTable t = chunks();
    for (std::size_t i = t.size(); i-- > 0;) {
        const ChunkRow& r = *t[i];
        if (r.kind() != ChunkKind::assistant) continue;
        auto it = r.payload().find("content");
        if (it == r.payload().end() || !it->value().is_string()) continue;
        std::string_view c = it->value().get_string();
        if (!is_blank(c)) return std::string(c);
    }
    return std::nullopt;
}

ChunkTable Session::raw_chunks() const {
    std::lock_guard lk(st_->mu);
    return st_->chunks;
}

void Session::set_raw_chunks(ChunkTable chunks) const {
    std::lock_guard lk(st_->mu);
    st_->chunks = std::move(chunks);
}

std::optional<TokenUsage> Session::raw_usage() const {
    std::lock_guard lk(st_->mu);
    return st_->get_usage();
}

void Session::set_raw_usage(std::optional<TokenUsage> usage) const {
    std::lock_guard lk(st_->mu);
    st_->set_usage(std::move(usage));
}

std::size_t Session::append_chunk(ChunkRowPtr row) const {
    if (!row) throw SessionError("Session.append_chunk: null row");
    std::lock_guard lk(st_->mu);
    if (st_->pending)
        throw SessionError("Session.append_chunk: session " + st_->id +
                           " is pending lazy materialization; its transcript belongs to the running loop "
                           "(synchronize() it first)");
    st_->chunks = st_->chunks.append(std::move(row));
    return st_->chunks.size() - 1;
}

// ---------------------------------------------------------------- lineage

Lineage Session::lineage() const {
    std::lock_guard lk(st_->mu);
    return st_->lineage;
}
std::vector<std::string> Session::parent_session_ids() const {
    std::lock_guard lk(st_->mu);
    return st_->lineage.parent_session_ids;
}
std::string Session::lineage_operator() const {
    std::lock_guard lk(st_->mu);
    return st_->lineage.op;
}
LineageKind Session::lineage_kind() const {
    std::lock_guard lk(st_->mu);
    return st_->lineage.kind;
}
LineageExtras Session::lineage_extras() const {
    std::lock_guard lk(st_->mu);
    return st_->lineage.extras;
}
void Session::set_lineage(Lineage l) const {
    std::lock_guard lk(st_->mu);
    if (st_->legacy_in_lineage) {  // the legacy provenance keeps the old parents and operator
        st_->legacy = std::make_unique<const SessionLineage>(st_->legacy_from_lineage());
        st_->legacy_in_lineage = false;
    }
    st_->lineage = std::move(l);
}
void Session::add_lineage_extra(std::string key, boost::json::value value) const {
    std::lock_guard lk(st_->mu);
    st_->lineage.extras.emplace_back(std::move(key), std::move(value));
}
std::optional<SessionLineage> Session::legacy_lineage() const {
    std::lock_guard lk(st_->mu);
    if (st_->legacy_in_lineage) return st_->legacy_from_lineage();
    if (!st_->legacy) return std::nullopt;
    return *st_->legacy;
}
void Session::set_legacy_lineage(std::optional<SessionLineage> l) const {
    std::lock_guard lk(st_->mu);
    st_->legacy_in_lineage = false;
    st_->legacy = l ? std::make_unique<const SessionLineage>(std::move(*l)) : nullptr;
}

namespace detail {
void keep_legacy_in_lineage(const Session& s) {
    std::lock_guard lk(s.st_->mu);
    if (s.st_->lineage.parent_session_ids.size() != 2) return;  // not an operator's two-parent stamp
    s.st_->legacy.reset();
    s.st_->legacy_in_lineage = true;
}
}  // namespace detail

// ---------------------------------------------------------------- sandbox

Session& Session::to(std::string backend) {
    close_sandbox();
    std::lock_guard lk(st_->mu);
    Placement& pl = st_->placement();
    pl.backend_name = std::move(backend);
    pl.spec.reset();
    return *this;
}

Session& Session::to(std::string backend, std::string working_dir) {
    return to(std::move(backend), backend::SandboxSpec::from_working_dir(std::move(working_dir)));
}

Session& Session::to(std::string backend, backend::SandboxSpec spec) {
    close_sandbox();
    std::lock_guard lk(st_->mu);
    Placement& pl = st_->placement();
    pl.backend_name = std::move(backend);
    pl.spec = std::make_shared<const backend::SandboxSpec>(std::move(spec));
    return *this;
}

Session& Session::close_sandbox() {
    close_slot(*st_);
    return *this;
}

Session& Session::bind_sandbox(backend::SandboxPtr sb) {
    if (!sb) throw SessionError("Session.bind_sandbox: null sandbox");
    backend::SandboxPtr old;
    {
        std::lock_guard lk(st_->mu);
        if (st_->placed().sandbox == sb) return *this;
        if (st_->place) old = std::move(st_->place->sandbox);
    }
    // Release the previous one first, then take the new reference.
    if (old && !old->closed()) old->release();
    sb->acquire();
    std::lock_guard lk(st_->mu);
    Placement& pl = st_->placement();
    pl.sandbox = sb;
    pl.target(*sb);
    return *this;
}

backend::SandboxPtr Session::sandbox() const {
    std::lock_guard lk(st_->mu);
    return st_->placed().sandbox;
}

std::optional<std::string> Session::sandbox_backend() const {
    std::lock_guard lk(st_->mu);
    return st_->placed().backend_name;
}

std::optional<backend::SandboxSpec> Session::sandbox_spec() const {
    std::lock_guard lk(st_->mu);
    const auto& spec = st_->placed().spec;
    if (!spec) return std::nullopt;
    return *spec;
}

backend::SandboxPtr Session::ensure_sandbox() const {
    for (;;) {
        std::unique_lock lk(st_->mu);
        Placement& pl = st_->placement();
        if (pl.sandbox && !pl.sandbox->closed()) return pl.sandbox;
        if (pl.sandbox) pl.sandbox.reset();
        if (pl.opening) {
            auto op = *pl.opening;
            lk.unlock();
            op.wait();  // throws DeadlockError on an io thread: use async_require_sandbox there
            if (op.failed()) (void)op.get();
            continue;
        }
        if (!pl.backend_name) throw SessionError(kNoBackend);
        async::Lazy<backend::SandboxPtr> op;
        pl.opening = op;
        std::string name = *pl.backend_name;
        std::optional<backend::SandboxSpec> spec;
        if (pl.spec) spec = *pl.spec;
        lk.unlock();
        try {
            auto sb = backend::get_backend(name).open(spec);
            sb->acquire();
            {
                std::lock_guard g(st_->mu);
                pl.sandbox = sb;
                pl.opening.reset();
            }
            op.set_value(sb);
            return sb;
        } catch (...) {
            {
                std::lock_guard g(st_->mu);
                pl.opening.reset();
            }
            op.set_exception(std::current_exception());
            (void)op.exception();  // the caller gets it by rethrow; do not report it as dropped
            throw;
        }
    }
}

boost::asio::awaitable<backend::SandboxPtr> Session::async_ensure_sandbox() const {
    for (;;) {
        std::optional<async::Lazy<backend::SandboxPtr>> wait_for;
        std::optional<async::Lazy<backend::SandboxPtr>> mine;
        std::string name;
        std::optional<backend::SandboxSpec> spec;
        {
            std::lock_guard lk(st_->mu);
            Placement& pl = st_->placement();
            if (pl.sandbox && !pl.sandbox->closed()) co_return pl.sandbox;
            if (pl.sandbox) pl.sandbox.reset();
            if (pl.opening) {
                wait_for = *pl.opening;
            } else {
                if (!pl.backend_name) throw SessionError(kNoBackend);
                mine.emplace();
                pl.opening = *mine;
                name = *pl.backend_name;
                if (pl.spec) spec = *pl.spec;
            }
        }
        if (wait_for) {
            co_await wait_for->async_wait(boost::asio::use_awaitable);
            if (wait_for->failed()) (void)co_await wait_for->async_get();
            continue;
        }
        std::exception_ptr err;
        backend::SandboxPtr sb;
        try {
            sb = co_await backend::get_backend(name).async_open(spec);
            sb->acquire();
        } catch (...) {
            err = std::current_exception();
        }
        {
            std::lock_guard g(st_->mu);
            if (!err) st_->placement().sandbox = sb;
            st_->placement().opening.reset();
        }
        if (err) {
            mine->set_exception(err);
            (void)mine->exception();
            std::rethrow_exception(err);
        }
        mine->set_value(sb);
        co_return sb;
    }
}

backend::SandboxPtr Session::require_sandbox() const {
    {
        std::lock_guard lk(st_->mu);
        if (st_->placed().sandbox) {
            if (st_->placed().sandbox->closed()) throw SessionError("session sandbox is closed");
            return st_->placed().sandbox;
        }
        if (!st_->placed().backend_name && !st_->placed().opening) throw SessionError(kNoBackend);
    }
    return ensure_sandbox();
}

boost::asio::awaitable<backend::SandboxPtr> Session::async_require_sandbox() const {
    {
        std::lock_guard lk(st_->mu);
        if (st_->placed().sandbox) {
            if (st_->placed().sandbox->closed()) throw SessionError("session sandbox is closed");
            co_return st_->placed().sandbox;
        }
        if (!st_->placed().backend_name && !st_->placed().opening) throw SessionError(kNoBackend);
    }
    co_return co_await async_ensure_sandbox();
}

void Session::enter() const {
    int depth;
    {
        std::lock_guard lk(st_->mu);
        depth = st_->depth;
    }
    if (depth == 0) ensure_sandbox();
    std::lock_guard lk(st_->mu);
    ++st_->depth;
}

void Session::exit() const {
    bool last;
    {
        std::lock_guard lk(st_->mu);
        if (st_->depth > 0) --st_->depth;
        last = st_->depth == 0;
    }
    if (last) close_slot(*st_);
}

void Session::exit_noexcept() const noexcept {
    try {
        exit();
    } catch (const std::exception& e) {
        rath::log(LogLevel::warning, "rath.session",
                  std::string("closing the sandbox of session ") + st_->id + " failed: " + e.what());
    }
}

int Session::scope_depth() const noexcept {
    std::lock_guard lk(st_->mu);
    return st_->depth;
}

// ---------------------------------------------------------------- graph operators

Session Session::derive(ChunkTable rows, std::optional<TokenUsage> usage) const {
    backend::SandboxPtr sb;
    std::shared_ptr<const backend::SandboxSpec> spec;
    SessionOptions o;
    {
        std::lock_guard lk(st_->mu);
        const Placement& pl = st_->placed();
        o.sandbox_backend = pl.backend_name;
        spec = pl.spec;
        sb = pl.sandbox;
    }
    o.usage = std::move(usage);
    Session out(std::move(rows), std::move(o));
    if (spec) out.st_->placement().spec = std::move(spec);  // shared, not copied
    if (sb && !sb->closed()) {
        try {
            out.bind_sandbox(sb);
        } catch (const backend::BackendSandboxClosed&) {
            // Closed in between: the result stays unbound but keeps the target.
            std::lock_guard lk(out.st_->mu);
            out.st_->placement().target(*sb);
        }
    }
    return out;
}

Session Session::fork() const {
    Session out = derive(chunks(), std::nullopt);
    lineage::stamp_new_session(out, {id()}, "Session.fork", LineageKind::op_fork);
    return out;
}

Session Session::detach() const {
    Session out = derive(chunks(), std::nullopt);
    lineage::stamp_new_session(out, {}, "Session.detach", LineageKind::op_detach);
    return out;
}

Session Session::merge(const Session& other) const {
    bool self_unbound = sandbox() == nullptr;
    bool other_unbound = other.sandbox() == nullptr;
    auto self_backend = sandbox_backend();
    auto other_backend = other.sandbox_backend();
    if (self_unbound && other_unbound && self_backend != other_backend)
        throw SessionError("cannot merge unbound sessions targeting different backends: " + pyrepr_opt(self_backend) +
                           " vs " + pyrepr_opt(other_backend));
    ChunkTable rows = chunks().extend(other.chunks());
    Session out = derive(std::move(rows), sum_token_usage(usage(), other.usage()));
    lineage::stamp_new_session(out, {id(), other.id()}, "Session.merge", LineageKind::op_merge);
    return out;
}

// ---------------------------------------------------------------- repr

std::string Session::repr() const {
    if (pending()) return "Session(pending \xE2\x80\xA6, operator=" + detail::pyrepr(lineage_operator()) + ")";
    ChunkTable t = raw_chunks();
    std::string block;
    std::size_t n = t.size();
    if (n == 0) {
        block = "[]";
    } else {
        std::vector<std::string> lines;
        if (n <= 9) {
            for (std::size_t i = 0; i < n; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
        } else {
            for (std::size_t i = 0; i < 4; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
            lines.push_back("... (" + std::to_string(n - 8) + " chunks omitted) ...");
            for (std::size_t i = n - 4; i < n; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
        }
        block = "[\n    ";
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (i) block += ",\n    ";
            block += lines[i];
        }
        block += "\n  ]";
    }
    return "Session(\n  chunks=" + block + ",\n  operator=" + detail::pyrepr(lineage_operator()) + ",\n)";
}

std::ostream& operator<<(std::ostream& os, const Session& s) { return os << s.repr(); }

}  // namespace rath
