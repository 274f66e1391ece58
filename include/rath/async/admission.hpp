#pragma once
// Admission: a FIFO gate that starts at most `limit` pieces of work at once. Work that
// finds the gate full waits as a plain function to call later — no coroutine frame, no
// request, no buffers yet — and starts, in arrival order, when a place frees up. An
// agent fan-out of 100,000 sessions over 4,096 connections then keeps 4,096 loops
// running and the rest as small queued records, the way a worker pool keeps jobs.
//
// Thread safety: every member function may be called from any thread at once; the
// start functions run outside the gate's lock, on the thread that called enter() or
// leave(). Cancellation: the gate has none of its own; work that must not start any
// more refuses its place (its start returns false). Errors: the gate throws nothing
// itself; what a start throws reaches the caller of enter() or leave() that ran it.
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace rath::async {

// Owned by a shared_ptr (Runtime::submit_into keeps it alive while admitted work runs).
// Work queued by Runtime::submit_into refers to its runtime: give a gate work of one
// runtime, which must outlive the work waiting at the gate (as it outlives any task).
class Admission : public std::enable_shared_from_this<Admission> {
public:
    // limit >= 1 (0 is taken as 1).
    explicit Admission(std::size_t limit);
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

    // `start` takes a place and returns true, then calls leave() exactly once when its
    // work ends; or it returns false at once to give the place back (its work will not
    // run, e.g. because the runtime is gone). It should not throw; if it does, the
    // exception reaches the caller of enter() or leave() that ran it and its place is
    // given back.
    using Start = std::function<bool()>;

    // Calls `start` now (on this thread) when fewer than limit() are admitted, else
    // queues it.
    void enter(Start start);
    // A place frees up: the oldest queued functions are started on this thread until
    // one takes it.
    void leave();

    [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
    [[nodiscard]] std::size_t active() const;   // admitted and not yet left
    [[nodiscard]] std::size_t waiting() const;  // queued

private:
    bool run(Start& start);

    const std::size_t limit_;
    mutable std::mutex mu_;
    std::size_t active_ = 0;
    std::deque<Start> queue_;
};

}  // namespace rath::async
