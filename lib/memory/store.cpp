#include <rath/async/block_on.hpp>
#include <rath/async/detail/counted_handle.hpp>
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
    if (!rath::async::detail::counted_acquire(refs_, closed_)) throw MemoryStoreClosed(handle_);
    return shared_from_this();
}

void MemoryStore::release() {
    rath::async::detail::counted_release(refs_, *this, *backend_, "rath.memory", "memory store");
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
