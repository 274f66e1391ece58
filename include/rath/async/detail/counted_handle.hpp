#pragma once
// The domain reference count of a handle that its backend closes: a sandbox
// (session.md §10) and a memory store (memory_flow.md §1.7) follow the same rules, so
// they share this one implementation. Not installed; for rath's own sources.
//
// acquire: +1 unless the handle is closed; a close racing with it wins (a backend's
// close is a forced close), so the increment is undone and false returned.
// release: -1 unless closed; the release that reaches zero closes the handle through
// its backend. On a runtime io thread the close runs as a coroutine (a close touches
// files and must not block the io thread) and a failure is logged on `channel`;
// elsewhere it blocks and a failure is thrown.
#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/co_spawn.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <string>

namespace rath::async::detail {

[[nodiscard]] inline bool counted_acquire(std::atomic<int>& refs, const std::atomic<bool>& closed) noexcept {
    int n = refs.load(std::memory_order_acquire);
    for (;;) {
        if (closed.load(std::memory_order_acquire)) return false;
        if (refs.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) break;
    }
    if (closed.load(std::memory_order_acquire)) {
        refs.fetch_sub(1, std::memory_order_acq_rel);
        return false;
    }
    return true;
}

template <class Handle, class Backend>
void counted_release(std::atomic<int>& refs, Handle& handle, Backend& backend, const char* channel, const char* what) {
    if (handle.closed()) return;
    if (refs.fetch_sub(1, std::memory_order_acq_rel) - 1 > 0) return;
    auto self = handle.shared_from_this();
    if (rath::async::on_runtime_thread()) {
        boost::asio::co_spawn(backend.runtime().executor(), backend.async_close(self),
                              [self, channel, what](std::exception_ptr e) {
                                  if (!e) return;
                                  try {
                                      std::rethrow_exception(e);
                                  } catch (const std::exception& ex) {
                                      rath::log(LogLevel::warning, channel,
                                                std::string("closing ") + what + " '" + self->handle() +
                                                    "' failed: " + ex.what());
                                  }
                              });
    } else {
        backend.close(self);
    }
}

}  // namespace rath::async::detail
