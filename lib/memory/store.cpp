#include <rath/async/block_on.hpp>
#include <rath/log.hpp>
#include <rath/memory/backend.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/store.hpp>

#include <boost/asio/co_spawn.hpp>

namespace rath::memory {

MemoryStore::MemoryStore(MemoryBackendPtr backend, std::string handle, MemoryStoreSpec spec)
    : backend_(std::move(backend)), handle_(std::move(handle)), spec_(std::move(spec)) {}

MemoryStore::~MemoryStore() = default;

MemoryStorePtr MemoryStore::acquire() {
    // Check and increment in one step; a close racing with us wins (it is a forced close).
    int n = refs_.load(std::memory_order_acquire);
    for (;;) {
        if (closed()) throw MemoryStoreClosed(handle_);
        if (refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) break;
    }
    if (closed()) {
        refs_.fetch_sub(1, std::memory_order_acq_rel);
        throw MemoryStoreClosed(handle_);
    }
    return shared_from_this();
}

void MemoryStore::release() {
    if (closed()) return;
    int after = refs_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if (after > 0) return;
    auto self = shared_from_this();
    if (rath::async::on_runtime_thread()) {
        // Closing touches meta.json: never block an io thread on it.
        boost::asio::co_spawn(backend_->runtime().executor(), backend_->async_close(self),
                              [self](std::exception_ptr e) {
                                  if (!e) return;
                                  try {
                                      std::rethrow_exception(e);
                                  } catch (const std::exception& ex) {
                                      rath::log(LogLevel::warning, "rath.memory",
                                                "closing memory store '" + self->handle() + "' failed: " + ex.what());
                                  }
                              });
    } else {
        backend_->close(self);
    }
}

boost::asio::awaitable<MemoryResult> MemoryStore::async_dispatch(MemoryOp op) {
    if (closed()) throw MemoryStoreClosed(handle_);
    auto task = backend_->async_dispatch(shared_from_this(), std::move(op));
    co_return co_await std::move(task);
}

MemoryResult MemoryStore::dispatch(MemoryOp op) {
    if (closed()) throw MemoryStoreClosed(handle_);
    return backend_->dispatch(shared_from_this(), std::move(op));
}

MemoryBackend::MemoryBackend(std::string name, rath::async::Runtime* runtime)
    : name_(std::move(name)), runtime_(runtime) {}

MemoryBackend::~MemoryBackend() = default;

rath::async::Runtime& MemoryBackend::runtime() const noexcept {
    return runtime_ ? *runtime_ : rath::async::Runtime::default_runtime();
}

MemoryStorePtr MemoryBackend::open(std::optional<MemoryStoreSpec> spec) {
    return rath::async::block_on(runtime(), async_open(std::move(spec)));
}

void MemoryBackend::close(MemoryStorePtr store) { rath::async::block_on(runtime(), async_close(std::move(store))); }

MemoryResult MemoryBackend::dispatch(MemoryStorePtr store, MemoryOp op) {
    return rath::async::block_on(runtime(), async_dispatch(std::move(store), std::move(op)));
}

}  // namespace rath::memory
