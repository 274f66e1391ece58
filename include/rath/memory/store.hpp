#pragma once
// MemoryStore (memory_flow.md §1.7): one opened store with its domain reference count.
// open() returns it with refcount 0; whoever uses it acquires (an Agent, a
// MemoryStoreGuard) and releases; the release that reaches zero closes it, and
// releasing a never-acquired store closes it too. backend().close(store) is the only
// force-close. The shared_ptr count is separate: dropping the last shared_ptr never
// closes anything.
//
// Thread safety: every member may be called from any thread at once. Operations on one
// store are serialized by the backend where the backend needs it (the local backend
// runs them one at a time per store directory); different stores run in parallel.
//
// Cancellation: cancelling a coroutine awaiting async_dispatch before its turn drops
// the operation; once started, file and index work runs to completion on the blocking
// pool.
//
// Errors: MemoryStoreClosed from acquire/dispatch on a closed store,
// UnsupportedMemoryOp for an op the backend does not handle; the sync dispatch throws
// rath::async::DeadlockError on a runtime io thread. Everything else is a value.
#include <rath/memory/fwd.hpp>
#include <rath/memory/op.hpp>
#include <rath/memory/result.hpp>
#include <rath/memory/spec.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace rath::memory {

class MemoryStore : public std::enable_shared_from_this<MemoryStore> {
public:
    MemoryStore(MemoryBackendPtr backend, std::string handle, MemoryStoreSpec spec);
    ~MemoryStore();
    MemoryStore(const MemoryStore&) = delete;
    MemoryStore& operator=(const MemoryStore&) = delete;

    [[nodiscard]] MemoryBackend& backend() const noexcept { return *backend_; }
    // Backend-specific and non-empty: the local backend's absolute store directory.
    [[nodiscard]] const std::string& handle() const noexcept { return handle_; }
    [[nodiscard]] const MemoryStoreSpec& spec() const noexcept { return spec_; }
    [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    [[nodiscard]] int refcount() const noexcept { return refs_.load(std::memory_order_acquire); }

    // +1; throws MemoryStoreClosed on a closed store.
    MemoryStorePtr acquire();
    // -1 (no-op when closed); at zero the backend closes the store. On a runtime io
    // thread the close runs asynchronously (a failure is logged on "rath.memory");
    // elsewhere it blocks and a failure is thrown.
    void release();

    // Each operation is counted in rath::memory_op_stats() (rath/ops_stats.hpp).
    [[nodiscard]] boost::asio::awaitable<MemoryResult> async_dispatch(MemoryOp op);
    [[nodiscard]] MemoryResult dispatch(MemoryOp op);

    // Backends call this on their close path; false when it was already closed.
    bool mark_closed() noexcept { return !closed_.exchange(true, std::memory_order_acq_rel); }

private:
    MemoryBackendPtr backend_;
    std::string handle_;
    MemoryStoreSpec spec_;
    std::atomic<int> refs_{0};
    std::atomic<bool> closed_{false};
};

// RAII acquire/release (Python's `with store:`); nested guards count.
class MemoryStoreGuard {
public:
    explicit MemoryStoreGuard(const MemoryStorePtr& store) : store_(store->acquire()) {}
    ~MemoryStoreGuard() {
        if (store_) store_->release();
    }
    MemoryStoreGuard(const MemoryStoreGuard&) = delete;
    MemoryStoreGuard& operator=(const MemoryStoreGuard&) = delete;
    [[nodiscard]] const MemoryStorePtr& get() const noexcept { return store_; }

private:
    MemoryStorePtr store_;
};

}  // namespace rath::memory
