#pragma once
// The MemoryBackend contract (memory_flow.md §1.8). An instance owns a table of the
// stores it opened; the registry hands out a fresh instance per get().
//
// The failure/exception split: data-plane problems (a bad URI, a missing entry, an I/O
// or remote error) come back as ExecutionFailure values; contract violations throw (a
// closed store: MemoryStoreClosed; an op outside supported_ops(): UnsupportedMemoryOp;
// an open that cannot produce a store: MemoryBackendError).
//
// Thread safety: every member may be called from any thread at once. Cancellation: see
// store.hpp. The sync facades block the calling thread and throw
// rath::async::DeadlockError on a runtime io thread.
#include <rath/memory/capabilities.hpp>
#include <rath/memory/fwd.hpp>
#include <rath/memory/op.hpp>
#include <rath/memory/result.hpp>
#include <rath/memory/spec.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace rath::async {
class Runtime;
}

namespace rath::memory {

class MemoryBackend : public std::enable_shared_from_this<MemoryBackend> {
public:
    explicit MemoryBackend(std::string name, rath::async::Runtime* runtime = nullptr);
    virtual ~MemoryBackend();
    MemoryBackend(const MemoryBackend&) = delete;
    MemoryBackend& operator=(const MemoryBackend&) = delete;

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    // The runtime given at construction, else the default runtime.
    [[nodiscard]] rath::async::Runtime& runtime() const noexcept;

    [[nodiscard]] virtual MemoryCapabilities capabilities() const = 0;
    [[nodiscard]] virtual OpSet supported_ops() const = 0;
    // Open stores this instance tracks.
    [[nodiscard]] virtual std::size_t store_count() const = 0;

    // A new store with refcount 0. Throws MemoryBackendError when it cannot open one.
    [[nodiscard]] virtual boost::asio::awaitable<MemoryStorePtr> async_open(std::optional<MemoryStoreSpec> spec) = 0;
    // Idempotent; closes whatever the refcount.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_close(MemoryStorePtr store) = 0;
    // Throws MemoryStoreClosed / UnsupportedMemoryOp; everything else is a value.
    [[nodiscard]] virtual boost::asio::awaitable<MemoryResult> async_dispatch(MemoryStorePtr store, MemoryOp op) = 0;

    [[nodiscard]] MemoryStorePtr open(std::optional<MemoryStoreSpec> spec = std::nullopt);
    void close(MemoryStorePtr store);
    [[nodiscard]] MemoryResult dispatch(MemoryStorePtr store, MemoryOp op);

private:
    std::string name_;
    rath::async::Runtime* runtime_;
};

}  // namespace rath::memory
