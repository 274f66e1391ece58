#pragma once
// CUDA-stream-like ordering over one sandbox (backend_tools.md §2.4). A Stream is a
// FIFO of dispatches run by one worker coroutine; different streams on the same
// sandbox run concurrently. Events order work across streams.
//
// Thread safety: every member function of Stream and Event may be called from any
// thread at once. Cancellation: cancelling a coroutine in async_submit() (waiting for
// room) or async_synchronize() ends that wait only; queued work runs on. Errors:
// StreamError on a closed stream (or after its worker died); what a dispatch throws
// goes to its Lazy; blocking calls throw rath::async::DeadlockError on a runtime io
// thread where they would wait.
#include <rath/async/lazy.hpp>
#include <rath/backend/backend.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

namespace rath::backend {

// "stream is closed", "stream is already closed", "elapsed_time requires both
// events to have been signaled".
class StreamError : public BackendError {
public:
    using BackendError::BackendError;
};

// A one-shot marker, signalled (and stamped with a monotonic time) when the worker
// of the stream it was recorded on reaches it.
class Event {
public:
    Event();
    [[nodiscard]] bool query() const noexcept;
    void wait() const;  // blocks (DeadlockError on a runtime thread)
    void synchronize() const { wait(); }
    [[nodiscard]] boost::asio::awaitable<void> async_wait() const;
    // Milliseconds from this event to `end`; StreamError unless both are signalled.
    [[nodiscard]] double elapsed_time(const Event& end) const;
    // Signals and stamps the event (what a stream's worker does on reaching it); a
    // second call does nothing.
    void signal();

private:
    rath::async::Lazy<std::chrono::steady_clock::time_point> stamp_;
};

class Stream {
public:
    // Starts the worker. buffer = 0: unbounded queue; > 0: submit waits while full.
    explicit Stream(SandboxPtr sandbox, std::size_t buffer = 0);
    ~Stream();  // close()
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Queues a dispatch; the future holds the result or what dispatch threw.
    rath::async::Lazy<DispatchResult> submit(Payload p);
    [[nodiscard]] boost::asio::awaitable<rath::async::Lazy<DispatchResult>> async_submit(Payload p);
    // Waits until everything queued before it has finished.
    void synchronize();
    [[nodiscard]] boost::asio::awaitable<void> async_synchronize();
    // True when the queue is empty and the worker idle.
    [[nodiscard]] bool query() const;
    Event record_event();
    // The worker waits for `e` (at most `timeout` seconds, then the future fails with
    // rath::async::TimeoutError "wait_event timed out after <t>s" and the worker
    // carries on).
    rath::async::Lazy<void> wait_event(const Event& e, std::optional<double> timeout = std::nullopt);
    rath::async::Lazy<void> wait_stream(Stream& other) { return wait_event(other.record_event()); }

    // Idempotent: rejects new work, lets queued work finish and joins the worker
    // (up to 120 s; on a runtime thread it does not wait).
    void close();
    [[nodiscard]] bool closed() const;
    [[nodiscard]] const SandboxPtr& sandbox() const noexcept { return sandbox_; }

    struct State;

private:
    SandboxPtr sandbox_;
    std::shared_ptr<State> st_;
};

}  // namespace rath::backend
