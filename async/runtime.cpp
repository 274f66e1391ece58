#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace rath::async {

namespace {

thread_local Runtime* tls_runtime = nullptr;

std::size_t cores() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : n;
}

std::size_t io_thread_count(const RuntimeOptions& o) { return o.threads ? o.threads : cores(); }

}  // namespace

Runtime* current_runtime() noexcept { return tls_runtime; }

struct Runtime::Task final : detail::CancelTarget, std::enable_shared_from_this<Runtime::Task> {
    explicit Task(boost::asio::any_io_executor ex) : executor(std::move(ex)) {}
    // Terminal cancellation, emitted once. A signal may only be emitted from the
    // context its operation runs in: the task's own executor (its strand, or the single
    // io thread). A gated task that has not started sees `cancelled` when admitted
    // and fails instead of starting.
    void request_cancel() noexcept override {
        if (cancelled.exchange(true, std::memory_order_acq_rel)) return;
        try {
            boost::asio::post(executor, [t = shared_from_this()] { t->signal.emit(boost::asio::cancellation_type::terminal); });
        } catch (...) {
            // Out of memory for the handler: the task runs on; nothing else to do here.
        }
    }
    // Cancels the task for `reason` (recorded on its result first, so that its
    // producer reports why).
    void cancel(CancelReason reason) noexcept {
        if (result) result->note_cancel(reason);
        request_cancel();
    }
    std::atomic<bool> cancelled{false};
    boost::asio::any_io_executor executor;  // its own strand, or the io_context of a one-thread runtime
    boost::asio::cancellation_signal signal;
    std::shared_ptr<detail::LazyCore> result;  // failed at shutdown if never completed
    // Links of the runtime's list of unfinished tasks, which owns each through `self`
    // from start_task to end_task (a task is listed exactly while `self` is set):
    // starting costs no allocation beyond the task and ending no lookup.
    Task* prev = nullptr;
    Task* next = nullptr;
    std::shared_ptr<Task> self;
    // A gated task's operation, made when the gate admits it (then dropped).
    std::function<boost::asio::awaitable<void>()> make;
    Admission* gate = nullptr;
    Runtime* runtime = nullptr;
};

struct Runtime::Impl {
    Impl(RuntimeOptions o)
        : options(std::move(o)),
          blocking_threads(options.blocking_threads ? options.blocking_threads
                                                    : std::min<std::size_t>(32, cores() + 4)),
          blocking(blocking_threads),
          io(static_cast<int>(io_thread_count(options))),
          strands(io.get_executor(), io_thread_count(options) == 1) {}

    // A task on its own strand (none on a one-thread runtime), failing `result` at shutdown.
    std::shared_ptr<Task> new_task(std::shared_ptr<detail::LazyCore> r) {
        // One io thread already serializes every handler: a strand would only add a hop
        // per completion.
        auto t = threads.size() == 1 ? std::make_shared<Task>(io.get_executor())
                                     : std::make_shared<Task>(boost::asio::make_strand(io));
        t->result = std::move(r);
        return t;
    }
    Task* list(std::shared_ptr<Task> t) {
        Task* raw = t.get();
        std::lock_guard lk(tasks_mu);
        raw->self = std::move(t);
        raw->next = tasks;
        if (tasks) tasks->prev = raw;
        tasks = raw;
        ++task_count;
        return raw;
    }
    void unlist(Task* t) noexcept {
        std::shared_ptr<Task> owned;  // released after the lock: a task may hold the last reference to much
        std::lock_guard lk(tasks_mu);
        if (!t->self) return;  // already given up on by shutdown()
        (t->prev ? t->prev->next : tasks) = t->next;
        if (t->next) t->next->prev = t->prev;
        t->prev = t->next = nullptr;
        owned = std::move(t->self);
        if (--task_count == 0) tasks_cv.notify_all();
    }
    // The unfinished tasks (under tasks_mu).
    std::vector<std::shared_ptr<Task>> task_list() const {
        std::vector<std::shared_ptr<Task>> out;
        out.reserve(task_count);
        for (Task* t = tasks; t; t = t->next) out.push_back(t->self);
        return out;
    }
    // Empties the list: the tasks, no longer owning themselves nor listed.
    std::vector<std::shared_ptr<Task>> unlist_all() {
        std::lock_guard lk(tasks_mu);
        std::vector<std::shared_ptr<Task>> out = task_list();
        for (auto& t : out) {
            t->prev = t->next = nullptr;
            t->self.reset();
        }
        tasks = nullptr;
        task_count = 0;
        return out;
    }

    RuntimeOptions options;
    std::size_t blocking_threads;
    mutable std::mutex tasks_mu;
    std::condition_variable tasks_cv;
    Task* tasks = nullptr;  // unfinished tasks, newest first
    std::size_t task_count = 0;
    // Tasks shutdown() gave up on, kept (unlisted) until the runtime goes: their
    // completions, should any still run, name them by pointer.
    std::vector<std::shared_ptr<Task>> abandoned;
    std::atomic<bool> shut_down{false};
    std::atomic<bool> closing{false};  // shutdown(deadline) began: no new outside work
    std::mutex shutdown_mu;
    std::vector<std::thread> threads;
    boost::asio::thread_pool blocking;
    // Declared after the pool so that pending handlers (and coroutine frames) are
    // destroyed first, while everything they may touch still exists.
    boost::asio::io_context io;
    KeyedStrands strands;  // runs lanes inline on a one-thread runtime
    std::optional<boost::asio::executor_work_guard<executor_type>> work;
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
    Impl& m = *impl_;
    m.work.emplace(m.io.get_executor());
    const std::size_t n = io_thread_count(m.options);
    m.threads.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        m.threads.emplace_back([this, i] {
            std::string name = impl_->options.name.substr(0, 10) + "-io-" + std::to_string(i);
            pthread_setname_np(pthread_self(), name.c_str());
            tls_runtime = this;
            impl_->io.run();
            tls_runtime = nullptr;
        });
    }
}

Runtime::~Runtime() {
    shutdown();
    // A shutdown begun on a runtime thread stops the loop without finishing the tasks:
    // they go with the runtime (each owns itself while listed).
    impl_->unlist_all();
}

Runtime::executor_type Runtime::executor() noexcept { return impl_->io.get_executor(); }
boost::asio::io_context& Runtime::io_context() noexcept { return impl_->io; }
Runtime::blocking_executor_type Runtime::blocking_executor() noexcept { return impl_->blocking.get_executor(); }
std::size_t Runtime::thread_count() const noexcept { return impl_->threads.size(); }
std::size_t Runtime::blocking_thread_count() const noexcept { return impl_->blocking_threads; }
KeyedStrands& Runtime::strands() noexcept { return impl_->strands; }

// ---------------------------------------------------------------- the default runtime

namespace {

std::mutex default_mu;
std::optional<RuntimeOptions> default_options;
std::atomic<Runtime*> default_instance{nullptr};

RuntimeOptions default_runtime_options() {
    RuntimeOptions o = default_options.value_or(RuntimeOptions{});
    if (!default_options) {
        // RATH_THREADS sets the io thread count of the default runtime.
        if (const char* v = std::getenv("RATH_THREADS")) {
            char* end = nullptr;
            unsigned long n = std::strtoul(v, &end, 10);
            if (end != v && *end == '\0' && n > 0 && n <= 1024) o.threads = n;
        }
    }
    return o;
}

// The main thread's thread-local objects are destroyed when it leaves main (or calls
// exit), before any object with static storage duration ([basic.start.term]): this
// one drains and stops the default runtime then, while every static its sessions may
// use is still alive. It is constructed on the main thread by the namespace-scope
// initializer below, which runs there before main.
struct DefaultRuntimeExit {
    ~DefaultRuntimeExit() {
        Runtime* rt = default_instance.load(std::memory_order_acquire);
        if (rt && !rt->is_shut_down() && !rt->running_in_this_thread()) rt->shutdown(std::chrono::milliseconds(5000));
    }
};
thread_local DefaultRuntimeExit main_thread_exit;
[[maybe_unused]] const bool main_thread_exit_armed = (static_cast<void>(&main_thread_exit), true);

}  // namespace

void Runtime::configure_default(RuntimeOptions options) {
    std::lock_guard lk(default_mu);
    if (default_instance.load(std::memory_order_acquire))
        throw std::logic_error("Runtime::configure_default: the default runtime is already running");
    default_options = std::move(options);
}

Runtime& Runtime::default_runtime() {
    if (Runtime* rt = default_instance.load(std::memory_order_acquire)) return *rt;
    std::lock_guard lk(default_mu);
    if (Runtime* rt = default_instance.load(std::memory_order_relaxed)) return *rt;
    // Never destroyed: it is stopped (above, or by the program) and then stays, so
    // that code running during static destruction finds a stopped runtime rather than
    // a destroyed one.
    auto* rt = new Runtime(default_runtime_options());
    default_instance.store(rt, std::memory_order_release);
    return *rt;
}

// ---------------------------------------------------------------- tasks

Runtime::Task* Runtime::start_task(std::shared_ptr<detail::LazyCore> result) {
    if (impl_->shut_down.load(std::memory_order_acquire))
        throw RuntimeShutdownError("rath Runtime is shut down; cannot submit");
    // While shutdown(deadline) drains, work already running may still start the work
    // it is made of (it submits from an io thread); nothing new comes in from outside.
    if (impl_->closing.load(std::memory_order_acquire) && !running_in_this_thread())
        throw RuntimeShutdownError("rath Runtime is shutting down; not admitting new work");
    auto task = impl_->new_task(result);
    if (result) result->set_cancel_target(task);
    return impl_->list(std::move(task));
}

boost::asio::any_io_executor Runtime::task_executor(Task* t) const noexcept { return t->executor; }
boost::asio::cancellation_slot Runtime::task_slot(Task* t) noexcept { return t->signal.slot(); }
void Runtime::end_task(Task* t) noexcept { impl_->unlist(t); }

namespace {
// A submit_into task ended: fails its result if the operation threw or published
// none (usually it published: nothing to build).
void fail_unless_published(detail::LazyCore& core, std::exception_ptr e) {
    if (e || !core.ready()) {
        e = detail::typed_cancellation(std::move(e), core);
        if (!e) e = std::make_exception_ptr(std::logic_error("Runtime::submit_into: the operation finished without a result"));
        core.fail(std::move(e));  // a no-op if a result arrived meanwhile
    }
}
}  // namespace

void Runtime::spawn_into(boost::asio::awaitable<void> op, std::shared_ptr<detail::LazyCore> result) {
    Task* t = start_task(result);
    auto on_done = [this, t, core = std::move(result)](std::exception_ptr e) {
        fail_unless_published(*core, std::move(e));
        end_task(t);
    };
    boost::asio::co_spawn(t->executor, std::move(op),
                          boost::asio::bind_cancellation_slot(t->signal.slot(), std::move(on_done)));
}

void Runtime::spawn_gated(std::shared_ptr<Admission> gate, std::function<boost::asio::awaitable<void>()> make,
                          std::shared_ptr<detail::LazyCore> result) {
    Task* t = start_task(std::move(result));  // a shutdown fails `result` even while it waits
    t->make = std::move(make);
    t->gate = gate.get();
    t->runtime = this;
    // What waits at the gate is one shared_ptr, small enough for std::function to hold
    // without an allocation. The queued function does not own the gate (the gate owns
    // its queue); a started task does, until it leaves.
    gate->enter([task = t->self]() -> bool {
        Runtime& rt = *task->runtime;
        Task* const t = task.get();
        auto make = std::exchange(t->make, nullptr);
        if (rt.is_shut_down()) {
            t->result->fail(std::make_exception_ptr(RuntimeShutdownError("rath Runtime shut down before this operation started")));
            rt.end_task(t);
            return false;
        }
        if (t->cancelled.load(std::memory_order_acquire)) {
            const CancelReason why = t->result->cancel_reason().value_or(CancelReason::requested);
            t->result->fail(std::make_exception_ptr(
                Cancelled(std::string("cancelled (") + to_string(why) + ") before it started", why)));
            rt.end_task(t);
            return false;
        }
        auto on_done = [&rt, t, core = t->result, held = t->gate->shared_from_this()](std::exception_ptr e) {
            fail_unless_published(*core, std::move(e));
            rt.end_task(t);
            held->leave();
        };
        boost::asio::co_spawn(t->executor, make(), boost::asio::bind_cancellation_slot(t->signal.slot(), std::move(on_done)));
        return true;
    });
}

std::size_t Runtime::in_flight() const {
    std::lock_guard lk(impl_->tasks_mu);
    return impl_->task_count;
}

// ---------------------------------------------------------------- stopping

std::size_t Runtime::drain(std::chrono::milliseconds timeout) {
    if (running_in_this_thread()) throw DeadlockError("Runtime::drain() called from one of its own threads");
    Impl& m = *impl_;
    std::unique_lock lk(m.tasks_mu);
    if (m.tasks_cv.wait_for(lk, timeout, [&] { return m.task_count == 0; })) return 0;
    std::vector<std::shared_ptr<Task>> survivors = m.task_list();
    lk.unlock();
    for (auto& t : survivors) t->cancel(CancelReason::shutdown);
    lk.lock();
    m.tasks_cv.wait_for(lk, std::chrono::milliseconds(1000), [&] { return m.task_count == 0; });
    return survivors.size();
}

bool Runtime::is_shut_down() const noexcept { return impl_->shut_down.load(std::memory_order_acquire); }

std::size_t Runtime::shutdown(std::chrono::milliseconds deadline) {
    if (running_in_this_thread()) throw DeadlockError("Runtime::shutdown(deadline) called from one of its own threads");
    std::size_t cancelled = 0;
    if (!is_shut_down()) {
        impl_->closing.store(true, std::memory_order_release);
        cancelled = drain(deadline);
    }
    shutdown();
    return cancelled;
}

bool Runtime::is_closing() const noexcept {
    return impl_->closing.load(std::memory_order_acquire) || is_shut_down();
}

void Runtime::shutdown() {
    Impl& m = *impl_;
    std::lock_guard guard(m.shutdown_mu);
    if (m.shut_down.exchange(true)) return;
    if (running_in_this_thread()) {
        // Joining ourselves would deadlock; the destructor or another thread finishes.
        rath::log(LogLevel::warning, "rath.async", "Runtime::shutdown() called from a runtime thread; stopping without join");
        m.io.stop();
        return;
    }
    {
        std::unique_lock lk(m.tasks_mu);
        for (auto& task : m.task_list()) task->cancel(CancelReason::shutdown);
        // Give cancelled work a moment to unwind cleanly before the loop stops.
        m.tasks_cv.wait_for(lk, std::chrono::milliseconds(500), [&] { return m.task_count == 0; });
    }
    m.work.reset();
    m.io.stop();
    for (auto& t : m.threads)
        if (t.joinable()) t.join();
    m.blocking.stop();
    m.blocking.join();
    // Whatever never completed will not: tell its readers.
    std::vector<std::shared_ptr<Task>> left = m.unlist_all();
    {
        std::lock_guard lk(m.tasks_mu);
        m.abandoned.insert(m.abandoned.end(), left.begin(), left.end());
    }
    for (auto& t : left)
        if (t->result) t->result->fail(std::make_exception_ptr(RuntimeShutdownError("rath Runtime shut down before this operation finished")));
}

}  // namespace rath::async
