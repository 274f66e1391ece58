#pragma once
// block_on: run an awaitable to completion from synchronous code and return its
// result (or rethrow its exception). The bridge for scripts and sync facades.
// The result is copied out of the shared Lazy, so T must be copyable.
//
// Thread safety: callable from any thread that is not an io thread of a rath runtime;
// there it throws DeadlockError (the thread could be the one `op` needs). Cancellation:
// none from the caller; a drain or shutdown of `rt` cancels `op`, and block_on then
// throws what `op` ended with (RuntimeShutdownError when it never finished). Errors:
// whatever `op` throws, rethrown on the calling thread; RuntimeShutdownError when `rt`
// is shut down.
#include <rath/async/runtime.hpp>

#include <boost/asio/co_spawn.hpp>

#include <type_traits>

namespace rath::async {

template <class T>
[[nodiscard]] T block_on(Runtime& rt, boost::asio::awaitable<T> op) {
    if (on_runtime_thread())
        throw DeadlockError("block_on() called from a runtime thread, which could deadlock it; co_await the operation instead");
    Lazy<T> lazy = rt.submit(std::move(op));
    // Waiting on the Lazy keeps drain/shutdown semantics (a shutdown fails it).
    lazy.wait();
    if constexpr (std::is_void_v<T>)
        lazy.get();
    else
        return lazy.get();
}

template <class T>
[[nodiscard]] T block_on(boost::asio::awaitable<T> op) {
    return block_on(Runtime::default_runtime(), std::move(op));
}

}  // namespace rath::async
