#include <rath/async/runtime.hpp>
#include <rath/session/persistence/async_writer.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <deque>
#include <mutex>

namespace rath::persistence {

namespace {

struct Item {
    std::size_t index = 0;
    ChunkRowPtr row;                       // a chunk record, or
    std::optional<std::string> recording;  // a line of the model-call recording
    std::optional<async::Lazy<void>> ack;
};

// Shared by the handles and the drain coroutine. The SessionWriter is touched only on
// blocking-pool threads, one step at a time (drain writes, then close or abandon).
struct Core {
    async::Runtime* rt = nullptr;
    std::shared_ptr<SessionWriter> writer;
    std::filesystem::path path, partial_path;
    std::size_t maxsize = 256;
    std::atomic<std::size_t> written{0};

    std::mutex mu;
    std::deque<Item> queue;
    std::optional<async::Lazy<void>> item_available;  // the drain waits on it when idle
    std::deque<async::Lazy<void>> space_waiters;       // producers waiting for room
    bool closed = false;                               // no more enqueues
    bool stop = false;                                 // drain the queue, then finish
    bool aborted = false;                              // finish now, drop the queue
    std::exception_ptr latched;
    async::Lazy<void> drained;
    std::optional<async::Lazy<void>> close_done;

    // Under mu.
    void wake_drain() {
        if (item_available) {
            item_available->try_set_value();
            item_available.reset();
        }
    }
    void wake_all_producers() {
        for (auto& w : space_waiters) w.try_set_value();
        space_waiters.clear();
    }

    // Non-blocking: the drain coroutine finishes and abandons the file on the pool.
    void request_abandon() {
        std::vector<Item> dropped;
        {
            std::lock_guard lk(mu);
            if (closed) return;
            closed = true;
            aborted = true;
            for (auto& it : queue) dropped.push_back(std::move(it));
            queue.clear();
            wake_drain();
            wake_all_producers();
        }
        for (auto& it : dropped)
            if (it.ack)
                it.ack->try_set_exception(std::make_exception_ptr(PersistenceError(
                    "the session writer for " + path.string() + " was abandoned before the row was written",
                    partial_path.string())));
    }
};

boost::asio::awaitable<void> drain_loop(std::shared_ptr<Core> c) {
    auto pool = c->rt->blocking_executor();
    for (;;) {
        Item item;
        std::optional<async::Lazy<void>> wait;
        {
            std::lock_guard lk(c->mu);
            if (c->aborted) break;
            if (!c->queue.empty()) {
                item = std::move(c->queue.front());
                c->queue.pop_front();
                if (!c->space_waiters.empty()) {
                    c->space_waiters.front().try_set_value();
                    c->space_waiters.pop_front();
                }
            } else if (c->stop) {
                break;
            } else {
                c->item_available.emplace();
                wait = c->item_available;
            }
        }
        if (wait) {
            co_await wait->async_wait(boost::asio::use_awaitable);
            continue;
        }
        std::exception_ptr err;
        try {
            // A named job, not a lambda temporary in the co_await (GCC 12, see async_blocking).
            if (item.recording) {
                auto job = [c, line = std::move(*item.recording)] { c->writer->write_recording(line); };
                co_await rath::async::Runtime::async_blocking(pool, std::move(job));
            } else {
                auto job = [c, index = item.index, row = item.row] { c->writer->write_chunk(index, *row); };
                co_await rath::async::Runtime::async_blocking(pool, std::move(job));
                c->written.fetch_add(1, std::memory_order_relaxed);
            }
        } catch (...) {
            err = std::current_exception();
            std::lock_guard lk(c->mu);
            c->latched = err;  // later rows are still attempted
        }
        if (item.ack) {
            if (err) {
                item.ack->try_set_exception(err);
            } else {
                item.ack->try_set_value();
            }
        }
    }
    bool aborted;
    {
        std::lock_guard lk(c->mu);
        aborted = c->aborted;
    }
    if (aborted) {
        auto job = [c] { c->writer->abandon(); };
        co_await rath::async::Runtime::async_blocking(pool, std::move(job));
    }
}

boost::asio::awaitable<void> enqueue(std::shared_ptr<Core> c, Item item) {
    for (;;) {
        async::Lazy<void> space;
        {
            std::lock_guard lk(c->mu);
            if (c->latched) std::rethrow_exception(c->latched);
            if (c->closed)
                throw PersistenceError("AsyncSessionWriter is closed; cannot enqueue more chunks", c->path.string());
            if (c->queue.size() < c->maxsize) {
                c->queue.push_back(std::move(item));
                c->wake_drain();
                co_return;
            }
            c->space_waiters.push_back(space);
        }
        co_await space.async_wait(boost::asio::use_awaitable);  // backpressure
    }
}

}  // namespace

struct AsyncSessionWriter::State {
    std::shared_ptr<Core> core;
    // The last handle gone without close(): stop and keep the partial file.
    ~State() {
        if (core) core->request_abandon();
    }
};

boost::asio::awaitable<AsyncSessionWriter> AsyncSessionWriter::async_open(Session session) {
    AsyncWriterOptions options;
    return async_open(std::move(session), std::move(options));
}

boost::asio::awaitable<AsyncSessionWriter> AsyncSessionWriter::async_open(Session session, AsyncWriterOptions options) {
    auto& rt = options.runtime ? *options.runtime : async::Runtime::default_runtime();
    auto core = std::make_shared<Core>();
    core->rt = &rt;
    core->maxsize = options.queue_maxsize == 0 ? 1 : options.queue_maxsize;
    // Opening (mkdir, open, flock, header write) is blocking I/O: on the pool.
    Session for_writer = session;
    WriterOptions writer_options = options.writer;
    auto open_job = [for_writer, writer_options] { return std::make_shared<SessionWriter>(for_writer, writer_options); };
    std::shared_ptr<SessionWriter> writer =
        co_await rath::async::Runtime::async_blocking(rt.blocking_executor(), std::move(open_job));
    core->writer = std::move(writer);
    core->path = core->writer->path();
    core->partial_path = core->writer->partial_path();
    auto drained = core->drained;
    boost::asio::co_spawn(boost::asio::make_strand(rt.executor()), drain_loop(core),
                          [drained, core](std::exception_ptr e) mutable {
                              if (e) {
                                  std::lock_guard lk(core->mu);
                                  if (!core->latched) core->latched = e;
                              }
                              drained.try_set_value();
                          });
    auto st = std::make_shared<State>();
    st->core = std::move(core);
    co_return AsyncSessionWriter(std::move(st));
}

boost::asio::awaitable<void> AsyncSessionWriter::async_enqueue_chunk(std::size_t index, ChunkRowPtr row) {
    if (!row) throw PersistenceError("AsyncSessionWriter: null row");
    auto core = st_->core;
    Item item;
    item.index = index;
    item.row = std::move(row);
    co_await enqueue(core, std::move(item));
}

boost::asio::awaitable<void> AsyncSessionWriter::async_write_chunk(std::size_t index, ChunkRowPtr row) {
    if (!row) throw PersistenceError("AsyncSessionWriter: null row");
    auto core = st_->core;
    async::Lazy<void> ack;
    Item item;
    item.index = index;
    item.row = std::move(row);
    item.ack = ack;
    co_await enqueue(core, std::move(item));
    co_await ack.async_get();
}

boost::asio::awaitable<void> AsyncSessionWriter::async_enqueue_recording(std::string line) {
    auto core = st_->core;
    Item item;
    item.recording = std::move(line);
    co_await enqueue(core, std::move(item));
}

boost::asio::awaitable<void> AsyncSessionWriter::async_close() {
    auto c = st_->core;
    async::Lazy<void> done;
    bool first = false;
    {
        std::lock_guard lk(c->mu);
        if (c->close_done) {
            done = *c->close_done;
        } else if (c->aborted) {
            co_return;  // abandoned: nothing to promote
        } else {
            c->close_done = done;
            c->closed = true;
            c->stop = true;
            c->wake_drain();
            c->wake_all_producers();
            first = true;
        }
    }
    if (!first) {
        co_await done.async_wait(boost::asio::use_awaitable);
        co_return;
    }
    co_await c->drained.async_get();
    std::exception_ptr err;
    try {
        auto job = [c] { c->writer->close(); };
        co_await rath::async::Runtime::async_blocking(c->rt->blocking_executor(), std::move(job));
    } catch (...) {
        err = std::current_exception();
    }
    done.set_value();
    if (err) std::rethrow_exception(err);
    std::exception_ptr latched;
    {
        std::lock_guard lk(c->mu);
        latched = c->latched;
    }
    if (latched) std::rethrow_exception(latched);
}

boost::asio::awaitable<void> AsyncSessionWriter::async_abandon() {
    auto c = st_->core;
    {
        std::lock_guard lk(c->mu);
        if (c->closed && !c->aborted) co_return;  // already closing/closed normally
    }
    c->request_abandon();
    co_await c->drained.async_wait(boost::asio::use_awaitable);
}

const std::filesystem::path& AsyncSessionWriter::path() const noexcept { return st_->core->path; }
const std::filesystem::path& AsyncSessionWriter::partial_path() const noexcept { return st_->core->partial_path; }
std::size_t AsyncSessionWriter::chunks_written() const noexcept {
    return st_->core->written.load(std::memory_order_relaxed);
}

}  // namespace rath::persistence
