// Session: construction, the lazy gate of a pending session, lineage fields, and the
// accessor the library's producers and readers use (lib/session/session_state.hpp).
// Placement is in session_placement.cpp, the graph operators in session_operators.cpp.
#include <rath/session.hpp>

#include <rath/async/runtime.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/log.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/registry.hpp>

#include "lib/session/session_state.hpp"
#include "lib/session/uuid.hpp"
#include "lib/text/demangle.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <typeinfo>

namespace rath {

namespace detail {

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

const Placement& SessionState::placed() const {
    static const Placement none;
    return place ? *place : none;
}

SessionState::~SessionState() {
    if (registry_epoch.load(std::memory_order_relaxed) != 0) session_registry().forget(this, id);
    // Checked at destruction rather than on completion so that a synchronize() on
    // the next line never races the report.
    if (!pending || pending->consumed || !pending->done.ready() || !pending->done.failed()) return;
    auto e = pending->done.exception();  // marks it observed: the Lazy does not report it again
    rath::log(LogLevel::error, "rath.session",
              "Session " + id + " pending future raised " + describe(e) +
                  " but was never synchronize()d; the error has been dropped. Call session.synchronize() or read "
                  "session.chunks() to surface it.");
}

void SessionAccess::set_pending(const Session& s, async::Lazy<void> done) {
    auto p = std::make_shared<PendingResult>();
    p->done = std::move(done);
    std::lock_guard lk(s.st_->mu);
    s.st_->pending = std::move(p);
    s.st_->has_pending.store(true, std::memory_order_release);
}

void SessionAccess::publish(const Session& s, ChunkTable rows, const std::optional<TokenUsage>& usage) {
    std::lock_guard lk(s.st_->mu);
    s.st_->chunks = std::move(rows);
    s.st_->set_usage(usage);
}

void SessionAccess::publish_usage(const Session& s, const std::optional<TokenUsage>& usage) {
    std::lock_guard lk(s.st_->mu);
    s.st_->set_usage(usage);
}

ChunkTable SessionAccess::raw_chunks(const Session& s) {
    std::lock_guard lk(s.st_->mu);
    return s.st_->chunks;
}

std::optional<TokenUsage> SessionAccess::raw_usage(const Session& s) {
    std::lock_guard lk(s.st_->mu);
    return s.st_->get_usage();
}

void SessionAccess::set_legacy_lineage(const Session& s, std::optional<SessionLineage> l) {
    std::lock_guard lk(s.st_->mu);
    s.st_->legacy_in_lineage = false;
    s.st_->legacy = l ? std::make_unique<const SessionLineage>(std::move(*l)) : nullptr;
}

void SessionAccess::keep_legacy_in_lineage(const Session& s) {
    std::lock_guard lk(s.st_->mu);
    if (s.st_->lineage.parent_session_ids.size() != 2) return;  // not an operator's two-parent stamp
    s.st_->legacy.reset();
    s.st_->legacy_in_lineage = true;
}

}  // namespace detail

using detail::SessionState;

namespace {

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
    st_->set_usage(o.usage);
    st_->lineage = std::move(o.lineage);
    if (o.sandbox_backend || o.sandbox_spec) {
        detail::Placement& pl = st_->placement();
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

bool Session::pending() const noexcept { return st_->has_pending.load(std::memory_order_acquire); }

const std::string& Session::id() const noexcept { return st_->id; }

// ---------------------------------------------------------------- lazy gate

bool Session::waits() const noexcept { return !dispatch_view_ && st_->has_pending.load(std::memory_order_acquire); }

const Session& Session::synchronize() const {
    if (!waits()) return *this;
    std::shared_ptr<detail::PendingResult> p;
    {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p) return *this;
    // On an io thread, waiting (even for sync_mu, held by a thread that waits for this
    // very io thread) could deadlock: only a finished result may be read here.
    if (async::on_runtime_thread() && !p->done.ready())
        throw async::DeadlockError("Session " + st_->id +
                                   " is still being produced; reading it on a runtime thread would deadlock. "
                                   "co_await session.async_chunks() instead");
    std::lock_guard sl(p->sync_mu);
    {
        std::lock_guard lk(st_->mu);
        if (st_->pending != p) return *this;  // another thread consumed it
    }
    // The transcript and usage are already where readers look (the producer published
    // them); what remains is the outcome: nothing, or the error thrown here once.
    auto consume = [&] {
        std::lock_guard lk(st_->mu);
        p->consumed = true;
        st_->pending.reset();
        st_->has_pending.store(false, std::memory_order_release);
    };
    try {
        p->done.get();
    } catch (const async::DeadlockError&) {
        throw;  // nothing was consumed
    } catch (...) {
        consume();
        throw;
    }
    consume();
    return *this;
}

bool Session::cancel(CancelReason reason) const {
    std::shared_ptr<detail::PendingResult> p;
    {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    return p && p->done.cancel(reason);
}

boost::asio::awaitable<void> Session::async_synchronize() const {
    if (!waits()) co_return;
    std::shared_ptr<detail::PendingResult> p;
    {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p) co_return;
    if (!p->done.ready()) co_await p->done.async_wait(boost::asio::use_awaitable);
    synchronize();  // ready now: never waits
}

void Session::when_ready(std::function<void()> fn, async::Runtime* runtime) const {
    std::shared_ptr<detail::PendingResult> p;
    if (waits()) {
        std::lock_guard lk(st_->mu);
        p = st_->pending;
    }
    if (!p || p->done.ready()) {
        fn();
        return;
    }
    async::Runtime& rt = runtime ? *runtime : async::Runtime::default_runtime();
    p->done.async_wait(boost::asio::bind_executor(rt.executor(), [fn = std::move(fn)](boost::system::error_code) { fn(); }));
}

ChunkTable Session::chunks() const {
    if (waits()) synchronize();
    std::lock_guard lk(st_->mu);
    return st_->chunks;
}

std::optional<TokenUsage> Session::usage() const {
    if (waits()) synchronize();
    std::lock_guard lk(st_->mu);
    return st_->get_usage();
}

boost::asio::awaitable<ChunkTable> Session::async_chunks() const {
    if (waits()) co_await async_synchronize();
    co_return detail::SessionAccess::raw_chunks(*this);
}

boost::asio::awaitable<std::optional<TokenUsage>> Session::async_usage() const {
    if (waits()) co_await async_synchronize();
    co_return detail::SessionAccess::raw_usage(*this);
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

void Session::set_usage(std::optional<TokenUsage> usage) const {
    std::lock_guard lk(st_->mu);
    if (st_->pending)
        throw SessionError("Session.set_usage: session " + st_->id +
                           " is pending lazy materialization; its usage belongs to the running loop "
                           "(synchronize() it first)");
    st_->set_usage(usage);
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

}  // namespace rath
