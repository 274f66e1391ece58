#pragma once
// AsyncSessionWriter (session.md §5.4): the writer for coroutines. All file I/O runs
// on the runtime's blocking pool, never on an io thread. One drain coroutine per
// writer writes queued records strictly in FIFO order; the queue is bounded, so a
// producer suspends when it is full. A failed write is latched and rethrown by the
// next write and by async_close().
//
// A handle: copies share one writer, and the last copy dropped without async_close()
// abandons it (the partial file stays).
//
// Thread safety: every member function may be called from any thread, on any copy, at
// once; records are written in the order they were queued. Cancellation: cancelling a
// coroutine that waits for queue room or for an acknowledgement ends that wait only
// (operation_aborted): a record already queued is still written. async_close() is not
// meant to be cancelled: a close cancelled while the queue drains leaves the file
// partial and later async_close() calls waiting. Errors: PersistenceError (a null row,
// enqueueing after close or abandon, a failed write, open or rename), latched: a failed
// write is rethrown by every later enqueue and by async_close().
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/writer.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace rath::persistence {

struct AsyncWriterOptions {
    WriterOptions writer{};
    std::size_t queue_maxsize = 256;
    async::Runtime* runtime = nullptr;  // default: Runtime::default_runtime()
};

class AsyncSessionWriter {
public:
    // Opens the writer on the blocking pool: the header is on disk when this completes.
    // (No defaulted options argument: GCC 12 destroys a brace-initialized temporary in
    // a co_await expression twice, so pass options as a named variable.)
    [[nodiscard]] static boost::asio::awaitable<AsyncSessionWriter> async_open(Session session);
    [[nodiscard]] static boost::asio::awaitable<AsyncSessionWriter> async_open(Session session,
                                                                               AsyncWriterOptions options);

    // Queues a chunk record and returns once it is queued (waits for queue space).
    [[nodiscard]] boost::asio::awaitable<void> async_enqueue_chunk(std::size_t index, ChunkRowPtr row);
    // Queues a chunk record and returns once it is written (the acknowledgement: the
    // record's write(2) returned, and it was fdatasync'ed if sync_each_record).
    [[nodiscard]] boost::asio::awaitable<void> async_write_chunk(std::size_t index, ChunkRowPtr row);
    // Queues one line of the model-call recording (WriterOptions::record_llm; a writer
    // without it fails the write, latched like any other) in the same FIFO order as the
    // chunks, and returns once it is queued.
    [[nodiscard]] boost::asio::awaitable<void> async_enqueue_recording(std::string line);
    // Drains the queue, writes the trailer and promotes the file; rethrows a latched
    // write error. Idempotent.
    [[nodiscard]] boost::asio::awaitable<void> async_close();
    // Stops draining, drops queued records and leaves the partial. Idempotent.
    [[nodiscard]] boost::asio::awaitable<void> async_abandon();

    [[nodiscard]] const std::filesystem::path& path() const noexcept;
    [[nodiscard]] const std::filesystem::path& partial_path() const noexcept;
    [[nodiscard]] std::size_t chunks_written() const noexcept;

    struct State;

private:
    explicit AsyncSessionWriter(std::shared_ptr<State> st) : st_(std::move(st)) {}
    std::shared_ptr<State> st_;
};

}  // namespace rath::persistence
