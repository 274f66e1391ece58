#include <rath/async/runtime.hpp>
#include <rath/async/detail/exit_order.hpp>
#include <rath/log.hpp>

#include <boost/asio/post.hpp>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

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

Runtime::Runtime(RuntimeOptions options)
    : options_(std::move(options)),
      blocking_threads_(options_.blocking_threads ? options_.blocking_threads : std::min<std::size_t>(32, cores() + 4)),
      blocking_(blocking_threads_),
      io_(static_cast<int>(io_thread_count(options_))),
      strands_(io_.get_executor(), io_thread_count(options_) == 1) {
    work_.emplace(io_.get_executor());
    const std::size_t n = io_thread_count(options_);
    threads_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        threads_.emplace_back([this, i] {
            std::string name = options_.name.substr(0, 10) + "-io-" + std::to_string(i);
            pthread_setname_np(pthread_self(), name.c_str());
            tls_runtime = this;
            io_.run();
            tls_runtime = nullptr;
        });
    }
}

Runtime::~Runtime() {
    shutdown();
    // A shutdown begun on a runtime thread stops the loop without finishing the tasks:
    // they go with the runtime (each owns itself while listed).
    unlist_all();
}

namespace {
std::mutex default_options_mu;
std::optional<RuntimeOptions> default_options;
bool default_created = false;

// Constant-initialized, trivially destructible: usable from other files' load-time
// initializers and still intact at exit.
constexpr int max_prerequisites = 16;
void (*prerequisites[max_prerequisites])() = {};
std::atomic<int> prerequisite_count{0};

bool run_prerequisites() {
    const int n = std::min(prerequisite_count.load(std::memory_order_acquire), max_prerequisites);
    for (int i = 0; i < n; ++i)
        if (prerequisites[i]) prerequisites[i]();
    return true;
}
}  // namespace

namespace detail {
void add_default_runtime_prerequisite(void (*init)()) noexcept {
    // Several files may register the same initializer (each that may be linked alone):
    // it runs once.
    const int n = std::min(prerequisite_count.load(std::memory_order_acquire), max_prerequisites);
    for (int i = 0; i < n; ++i)
        if (prerequisites[i] == init) return;
    const int k = prerequisite_count.fetch_add(1, std::memory_order_acq_rel);
    if (k < max_prerequisites) prerequisites[k] = init;
}
}  // namespace detail

void Runtime::configure_default(RuntimeOptions options) {
    std::lock_guard lk(default_options_mu);
    if (default_created)
        throw std::logic_error("Runtime::configure_default: the default runtime is already running");
    default_options = std::move(options);
}

Runtime& Runtime::default_runtime() {
    // Constructed on first use; the static's destructor runs at exit, after main's
    // own objects are gone, and drains before shutting down (spec §6.1).
    struct Holder {
        Holder() : rt(take_options()) {}
        static RuntimeOptions take_options() {
            std::lock_guard lk(default_options_mu);
            default_created = true;
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
        Runtime rt;
        ~Holder() {
            if (!rt.is_shut_down()) {
                rt.drain(std::chrono::milliseconds(5000));
                rt.shutdown();
            }
        }
    };
    // Built first, so destroyed after the holder's drain (see exit_order.hpp).
    [[maybe_unused]] static const bool ready = run_prerequisites();
    static Holder holder;
    return holder.rt;
}

void Runtime::check_open() const {
    if (shut_down_.load(std::memory_order_acquire))
        throw RuntimeShutdownError("rath Runtime is shut down; cannot submit");
}

std::shared_ptr<Runtime::Task> Runtime::new_task(std::shared_ptr<detail::LazyCore> result) {
    // One io thread already serializes every handler: a strand would only add a hop
    // per completion.
    auto t = threads_.size() == 1 ? std::make_shared<Task>(io_.get_executor())
                                  : std::make_shared<Task>(boost::asio::make_strand(io_));
    t->result = std::move(result);
    return t;
}

Runtime::Task* Runtime::register_task(std::shared_ptr<Task> t) {
    Task* raw = t.get();
    std::lock_guard lk(tasks_mu_);
    raw->self = std::move(t);
    raw->next = tasks_;
    if (tasks_) tasks_->prev = raw;
    tasks_ = raw;
    ++task_count_;
    return raw;
}

void Runtime::finish_task(Task* t) {
    std::shared_ptr<Task> owned;  // released after the lock: a task may hold the last reference to much
    {
        std::lock_guard lk(tasks_mu_);
        if (!t->self) return;  // already given up on by shutdown()
        (t->prev ? t->prev->next : tasks_) = t->next;
        if (t->next) t->next->prev = t->prev;
        t->prev = t->next = nullptr;
        owned = std::move(t->self);
        if (--task_count_ == 0) tasks_cv_.notify_all();
    }
}

void Runtime::enter_gate(std::shared_ptr<Admission> gate, std::shared_ptr<Task> task) {
    // The queued function does not own the gate (the gate owns its queue); a started
    // task does, until it leaves.
    task->gate = gate.get();
    task->runtime = this;
    gate->enter([task = std::move(task)]() -> bool {
        Runtime& rt = *task->runtime;
        Task* const t = task.get();
        auto make = std::exchange(t->make, nullptr);
        if (rt.is_shut_down()) {
            t->result->fail(std::make_exception_ptr(RuntimeShutdownError("rath Runtime shut down before this operation started")));
            rt.finish_task(t);
            return false;
        }
        auto on_done = [&rt, t, core = t->result, held = t->gate->shared_from_this()](std::exception_ptr e) {
            rt.end_into_task(t, *core, std::move(e));
            held->leave();
        };
        boost::asio::co_spawn(t->executor, make(), boost::asio::bind_cancellation_slot(t->signal.slot(), std::move(on_done)));
        return true;
    });
}

std::vector<std::shared_ptr<Runtime::Task>> Runtime::unlist_all() {
    std::lock_guard lk(tasks_mu_);
    std::vector<std::shared_ptr<Task>> out = task_list();
    for (auto& t : out) {
        t->prev = t->next = nullptr;
        t->self.reset();
    }
    tasks_ = nullptr;
    task_count_ = 0;
    return out;
}

std::vector<std::shared_ptr<Runtime::Task>> Runtime::task_list() const {
    std::vector<std::shared_ptr<Task>> out;
    out.reserve(task_count_);
    for (Task* t = tasks_; t; t = t->next) out.push_back(t->self);
    return out;
}

void Runtime::end_into_task(Task* t, detail::LazyCore& core, std::exception_ptr e) {
    if (e || !core.ready()) {  // usually the operation published its result: nothing to build
        if (!e) e = std::make_exception_ptr(std::logic_error("Runtime::submit_into: the operation finished without a result"));
        core.fail(std::move(e));  // a no-op if a result arrived meanwhile
    }
    finish_task(t);
}

std::size_t Runtime::in_flight() const {
    std::lock_guard lk(tasks_mu_);
    return task_count_;
}

std::size_t Runtime::drain(std::chrono::milliseconds timeout) {
    if (running_in_this_thread()) throw DeadlockError("Runtime::drain() called from one of its own threads");
    std::unique_lock lk(tasks_mu_);
    if (tasks_cv_.wait_for(lk, timeout, [&] { return task_count_ == 0; })) return 0;
    std::vector<std::shared_ptr<Task>> survivors = task_list();
    lk.unlock();
    // A cancellation signal may only be emitted from the context its operation runs
    // in: each task's own executor (its strand, or the single io thread), so emit there.
    for (auto& t : survivors)
        boost::asio::post(t->executor, [t] { t->signal.emit(boost::asio::cancellation_type::terminal); });
    lk.lock();
    tasks_cv_.wait_for(lk, std::chrono::milliseconds(1000), [&] { return task_count_ == 0; });
    return survivors.size();
}

bool Runtime::is_shut_down() const noexcept { return shut_down_.load(std::memory_order_acquire); }

void Runtime::shutdown() {
    std::lock_guard guard(shutdown_mu_);
    if (shut_down_.exchange(true)) return;
    if (running_in_this_thread()) {
        // Joining ourselves would deadlock; the destructor or another thread finishes.
        rath::log(LogLevel::warning, "rath.async", "Runtime::shutdown() called from a runtime thread; stopping without join");
        io_.stop();
        return;
    }
    {
        std::unique_lock lk(tasks_mu_);
        for (auto& task : task_list())
            boost::asio::post(task->executor, [task] { task->signal.emit(boost::asio::cancellation_type::terminal); });
        // Give cancelled work a moment to unwind cleanly before the loop stops.
        tasks_cv_.wait_for(lk, std::chrono::milliseconds(500), [&] { return task_count_ == 0; });
    }
    work_.reset();
    io_.stop();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    blocking_.stop();
    blocking_.join();
    // Whatever never completed will not: tell its readers.
    std::vector<std::shared_ptr<Task>> left = unlist_all();
    {
        std::lock_guard lk(tasks_mu_);
        abandoned_.insert(abandoned_.end(), left.begin(), left.end());
    }
    for (auto& t : left)
        if (t->result) t->result->fail(std::make_exception_ptr(RuntimeShutdownError("rath Runtime shut down before this operation finished")));
}

}  // namespace rath::async
