#include "lib/ops_stats_record.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/detail/counted_handle.hpp>
#include <rath/log.hpp>
#include <rath/memory/backend.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <array>
#include <chrono>
#include <exception>

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

namespace {

// The op label of the process's memory metrics, by MemoryOp alternative.
constexpr std::array<std::string_view, 8> op_labels{"write", "read", "list", "tree", "find", "search", "resource", "commit"};
static_assert(op_labels.size() == std::variant_size_v<MemoryOp>);

// The process's memory metrics (rath/ops_stats.hpp): one count per operation.
void count(std::string_view op, const MemoryResult* result, std::exception_ptr failure,
           std::chrono::steady_clock::time_point started) {
    std::string_view outcome = "ok";
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const rath::Cancelled&) {
            outcome = "cancelled";
        } catch (const boost::system::system_error& e) {
            outcome = e.code() == boost::asio::error::operation_aborted ? "cancelled" : "error";
        } catch (...) {
            outcome = "error";
        }
    } else if (result && std::holds_alternative<ExecutionFailure>(*result)) {
        outcome = "failure";
    }
    rath::detail::record_memory_op(op, outcome, std::chrono::steady_clock::now() - started);
}

}  // namespace

boost::asio::awaitable<MemoryResult> MemoryStore::async_dispatch(MemoryOp op) {
    const auto started = std::chrono::steady_clock::now();
    const std::string_view name = op_labels[op.index()];
    std::exception_ptr failure;
    try {
        if (closed()) throw MemoryStoreClosed(handle_);
        auto task = backend_->async_dispatch(shared_from_this(), std::move(op));
        MemoryResult r = co_await std::move(task);
        count(name, &r, nullptr, started);
        co_return r;
    } catch (...) {
        failure = std::current_exception();
    }
    count(name, nullptr, failure, started);
    std::rethrow_exception(failure);
}

MemoryResult MemoryStore::dispatch(MemoryOp op) {
    const auto started = std::chrono::steady_clock::now();
    const std::string_view name = op_labels[op.index()];
    try {
        if (closed()) throw MemoryStoreClosed(handle_);
        MemoryResult r = backend_->dispatch(shared_from_this(), std::move(op));
        count(name, &r, nullptr, started);
        return r;
    } catch (...) {
        count(name, nullptr, std::current_exception(), started);
        throw;
    }
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
