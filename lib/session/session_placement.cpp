// Session placement (session.md §1.6): the backend a session targets, the sandbox it
// holds a reference to, and opening one on first use.
#include <rath/session.hpp>

#include <rath/backend/registry.hpp>
#include <rath/log.hpp>

#include "lib/session/session_state.hpp"

#include <boost/asio/use_awaitable.hpp>

namespace rath {

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

}  // namespace


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

}  // namespace rath
