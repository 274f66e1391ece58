// rath-worker: takes runs from the PostgreSQL run queue (rath/pg/run_queue.hpp) and
// runs the agent each one names (config.json's "agents" section,
// rath/flow/config_agents.hpp) on its input; the output session is stored in the same
// database (rath/pg/session_store.hpp) and the run completed with its id. See usage().
//
// A run's payload (what rath::cluster::Client enqueues):
//   {"agent": "<name>", "input_session_id": "<uuid of a stored session>"}
//   {"agent": "<name>", "message": "<text of one user message>"}
// Its result: {"session_id": "<uuid of the stored output session>"}; a run that fails
// (unknown agent, missing input, the agent loop's error) is failed with the error text.
// Every model response is recorded in the database (RunQueue::async_record_llm_call)
// before the loop goes on; a worker that takes over a run whose worker died replays
// those responses instead of calling the model again. Tool calls are not recorded: a
// taken-over run runs its tools again.
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/env.hpp>
#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/recording.hpp>
#include <rath/llm/registry.hpp>
#include <rath/log.hpp>
#include <rath/net/retry.hpp>
#include <rath/pg/run_queue.hpp>
#include <rath/pg/session_store.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>
#include <unistd.h>

namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

void usage(std::FILE* to, const char* program) {
    std::fprintf(to, "usage: %s [options]\n", program);
    std::fputs(
        "Takes runs from rath's PostgreSQL run queue and runs the config-defined agent each names.\n"
        "\n"
        "  --conninfo STR     libpq connection string or URI (default: $RATH_PG_CONNINFO)\n"
        "  --schema NAME      schema of rath's tables (default public)\n"
        "  --queue NAME       queue to take runs from (default \"default\")\n"
        "  --config PATH      config file with the \"agents\" section (default: rath's usual config.json)\n"
        "  --owner NAME       lease owner name (default <hostname>:<pid>)\n"
        "  --lease-ms N       lease length; renewed every third of it while a run runs (default 30000)\n"
        "  --concurrency N    runs at once (default 1), sharing the process's queue connections; with\n"
        "                     N > 1 slot i's lease owner is <owner>#i\n"
        "  --log-level LEVEL  debug|info|warning|error|off (default warning)\n"
        "  --help             this text\n"
        "\n"
        "SIGTERM/SIGINT: stop taking runs, finish the current one, exit 0. A worker that dies\n"
        "(SIGKILL) leaves its run to be taken over by another worker when the lease lapses.\n"
        "Model responses are recorded in the database as they come: a run taken over replays them\n"
        "instead of calling the model again (its tools run again).\n"
        "Prints \"ready\" on stdout once the queue is reachable, \"claimed <id> <attempt>\" per run and\n"
        "\"replayed <id> <n>\" when a run reused n recorded model responses, and on a clean exit\n"
        "\"stats runs=<n> round_trips=<n> requests=<n> connects=<n>\": the runs it took and its\n"
        "database round trips (queue and store connections together).\n",
        to);
}

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "rath-worker: %s\n", message.c_str());
    std::exit(2);
}

std::optional<rath::LogLevel> parse_level(std::string_view s) {
    if (s == "debug") return rath::LogLevel::debug;
    if (s == "info") return rath::LogLevel::info;
    if (s == "warning") return rath::LogLevel::warning;
    if (s == "error") return rath::LogLevel::error;
    if (s == "off") return rath::LogLevel::off;
    return std::nullopt;
}

std::atomic<bool> stopping{false};

// The database being away (down, restarting, unreachable): PgError connect or
// connection_lost. A query error is an answer, not an absence.
bool database_away(const rath::pg::PgError& e) { return e.kind() != rath::pg::ErrorKind::query; }

// Backoff while the database is away: 0.1 s doubling to 2 s, with jitter.
rath::net::RetryPolicy db_backoff() {
    rath::net::RetryPolicy p;
    p.base = std::chrono::milliseconds(100);
    p.cap = std::chrono::seconds(2);
    return p;
}

// Runs `make()` (a fresh awaitable per attempt) again while the database is away, with
// db_backoff(), for at most `limit`; then, or on any other error, throws. Only for
// requests that are safe to repeat (reads, the idempotent record and finish).
template <class F>
auto while_database_away(F make, std::chrono::milliseconds limit = std::chrono::seconds(60))
    -> decltype(make()) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (int attempt = 0;; ++attempt) {
        std::chrono::milliseconds delay{0};
        try {
            co_return co_await make();
        } catch (const rath::pg::PgError& e) {
            if (!database_away(e) || std::chrono::steady_clock::now() >= deadline) throw;
            delay = std::chrono::duration_cast<std::chrono::milliseconds>(rath::net::backoff_delay(db_backoff(), attempt));
            rath::log(rath::LogLevel::warning, "rath.worker",
                      std::string("database away (") + e.what() + "); again in " + std::to_string(delay.count()) + " ms");
        }
        boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, delay);
        co_await t.async_wait(boost::asio::use_awaitable);
    }
}

std::string string_field(const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || !v->is_string()) throw std::runtime_error("run payload has no string \"" + std::string(key) + "\"");
    return std::string(v->get_string());
}

// The chat client of one run: the model calls a worker that held the run before
// completed (recorded in the database) are answered from the record, in order, as long
// as the loop asks the same requests again; every other call goes to the model, and its
// response is recorded before the loop sees it, so a worker that dies after it never
// makes that call again. A request that differs from the record (a tool whose result
// changed) ends the replay: from there the run calls the model.
class DurableChatClient final : public rath::llm::ChatClient {
public:
    DurableChatClient(std::shared_ptr<rath::llm::ChatClient> inner, rath::pg::RunQueue* queue, std::int64_t run_id,
                      std::string owner, std::vector<std::pair<std::string, std::string>> recorded)
        : ChatClient(&inner->runtime()),
          inner_(std::move(inner)),
          queue_(queue),
          run_id_(run_id),
          owner_(std::move(owner)),
          recorded_(std::move(recorded)) {}

    const rath::llm::Provider& provider() const noexcept override { return inner_->provider(); }
    std::string_view kind() const noexcept override { return inner_->kind(); }
    bool supports_streaming() const noexcept override { return inner_->supports_streaming(); }
    std::size_t replayed() const noexcept { return replayed_.load(); }

private:
    boost::asio::awaitable<void> do_complete(const rath::llm::ChatRequest& request, rath::llm::ChatResponse& out,
                                             const rath::llm::DeltaCallback* on_delta) override {
        const std::size_t index = next_.fetch_add(1);
        json::object body = rath::llm::request_to_json(request, provider().model.value_or(""));
        if (index < recorded_.size() && !diverged_.load()) {
            json::value was = json::parse(recorded_[index].first);
            if (was == json::value(body)) {
                out = rath::llm::response_from_json(json::parse(recorded_[index].second).as_object());
                replayed_.fetch_add(1);
                co_return;
            }
            diverged_.store(true);
            rath::log(rath::LogLevel::warning, "rath.worker",
                      "run " + std::to_string(run_id_) + ": model call " + std::to_string(index) +
                          " differs from the recorded one; calling the model from here on");
        }
        co_await inner_->async_complete(request, out, on_delta);
        // Kept until it is recorded: a database restart here must not cost the call.
        std::string req_text = json::serialize(body), resp_text = json::serialize(rath::llm::response_to_json(out));
        if (!co_await while_database_away(
                [&] { return queue_->async_record_llm_call(run_id_, owner_, index, req_text, resp_text); }))
            throw rath::Error("run " + std::to_string(run_id_) + ": the lease was lost");
    }

    std::shared_ptr<rath::llm::ChatClient> inner_;
    rath::pg::RunQueue* queue_;
    std::int64_t run_id_;
    std::string owner_;
    std::vector<std::pair<std::string, std::string>> recorded_;
    std::atomic<std::size_t> next_{0}, replayed_{0};
    std::atomic<bool> diverged_{false};
};

// The process's one listening connection, shared by its slots: PostgreSQL signals every
// listening backend of the database on each NOTIFY (enqueues and completions alike), so a
// listener per slot would multiply the server's work per run by the slot count. One slot
// at a time waits on the queue's channel; the others wait for it to see a notification.
struct WorkSignal {
    std::shared_ptr<rath::pg::RunQueue> queue;  // the slots' queue: one waiter at a time
    std::mutex mu;
    std::condition_variable cv;
    bool listening = false;
    std::uint64_t generation = 0;  // notifications seen so far

    std::uint64_t seen() {
        std::lock_guard lk(mu);
        return generation;
    }

    // Returns when a notification came after `since` was read, or `timeout` passed.
    void wait(rath::async::Runtime& rt, std::uint64_t since, std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu);
        if (generation != since) return;
        if (listening) {
            cv.wait_for(lk, timeout, [&] { return generation != since; });
            return;
        }
        listening = true;
        lk.unlock();
        bool woken = false;
        std::exception_ptr error;
        try {
            woken = rath::async::block_on(rt, queue->async_wait_for_work(timeout));
        } catch (...) {
            error = std::current_exception();
        }
        lk.lock();
        listening = false;
        if (woken) ++generation;
        cv.notify_all();
        lk.unlock();
        if (error) std::rethrow_exception(error);
    }
};

struct Worker {
    rath::async::Runtime& rt = rath::async::Runtime::default_runtime();
    std::shared_ptr<rath::config::ConfigStore> config;
    std::shared_ptr<rath::pg::PostgresSessionStore> store;
    std::shared_ptr<rath::pg::RunQueue> queue;  // shared by the slots
    std::string owner;
    std::chrono::milliseconds lease{30000};
    std::uint64_t runs = 0;  // claimed by this slot
    struct AgentEntry {
        rath::flow::ConfigAgent entry;
        rath::flow::AgentOptions options;
        std::shared_ptr<rath::llm::ChatClient> client;  // shared by the runs: one connection pool
    };
    struct AgentCache {
        std::mutex mu;
        std::map<std::string, AgentEntry> by_name;  // resolved once per name
    };
    std::shared_ptr<AgentCache> agents;  // shared by the process's slots
    std::shared_ptr<WorkSignal> signal;   // likewise

    template <class T>
    T await(boost::asio::awaitable<T> aw) {
        return rath::async::block_on(rt, std::move(aw));
    }

    AgentEntry agent_entry(const std::string& name) {
        std::lock_guard lk(agents->mu);
        auto it = agents->by_name.find(name);
        if (it != agents->by_name.end()) return it->second;
        AgentEntry e;
        e.entry = rath::flow::find_config_agent(*config, name);
        e.options = rath::flow::config_agent_options(e.entry, config);
        e.client = rath::llm::chat_client_for(e.options.loop.provider);
        return agents->by_name.emplace(name, std::move(e)).first->second;
    }

    // Runs one claimed run to its end: completed, failed, or dropped when the lease was
    // lost (another worker owns it now).
    void execute(const rath::pg::ClaimedRun& run) {
        std::optional<rath::Session> out;
        try {
            json::value parsed = json::parse(run.payload);
            if (!parsed.is_object()) throw std::runtime_error("run payload is not a JSON object");
            const auto& p = parsed.get_object();
            const AgentEntry e = agent_entry(string_field(p, "agent"));
            // The run's own agent: its chat client replays what an earlier holder of the
            // run recorded and records the rest. A first claim had no earlier holder.
            std::vector<std::pair<std::string, std::string>> recorded;
            if (run.attempts > 1) recorded = await(while_database_away([&] { return queue->async_llm_calls(run.id); }));
            auto client = std::make_shared<DurableChatClient>(e.client, queue.get(), run.id, owner, std::move(recorded));
            rath::flow::AgentOptions options = e.options;
            options.loop.client = client;
            rath::flow::Agent a(e.entry.system_prompt, options);
            rath::Session in = p.contains("input_session_id")
                                   ? await(while_database_away([&] {
                                         return store->async_load(string_field(p, "input_session_id"));
                                     })).to_session()
                                   : rath::Session::from_user_message(string_field(p, "message"));
            out = a(in);
            // Heartbeats on this thread while the loop runs on the runtime.
            auto done = std::make_shared<std::promise<void>>();
            std::future<void> finished = done->get_future();
            out->when_ready([done] { done->set_value(); }, &rt);
            const auto beat = std::max<std::chrono::milliseconds>(lease / 3, 10ms);
            while (finished.wait_for(beat) != std::future_status::ready) {
                bool held = true;
                try {
                    held = await(queue->async_heartbeat(run.id, owner, lease));
                } catch (const rath::pg::PgError& e) {
                    // The database is away: keep running; the next beat reconnects. If it
                    // stays away past the lease, the run is taken over and our
                    // completion is refused.
                    rath::log(rath::LogLevel::warning, "rath.worker", std::string("heartbeat: ") + e.what());
                }
                if (!held) {
                    rath::log(rath::LogLevel::warning, "rath.worker", "lease of run " + std::to_string(run.id) + " lost; dropping it");
                    out->cancel();
                    finished.wait();
                    return;
                }
            }
            out->synchronize();  // throws the loop's error
            if (client->replayed() > 0) {
                std::printf("replayed %lld %zu\n", static_cast<long long>(run.id), client->replayed());
                std::fflush(stdout);
            }
            await(persist(*out));
        } catch (const rath::pg::PgError& e) {
            if (database_away(e)) {
                // Not the run's fault: left to lapse and be taken again (its recorded
                // model calls are replayed then).
                rath::log(rath::LogLevel::warning, "rath.worker",
                          "run " + std::to_string(run.id) + " left to lapse, the database is away: " + e.what());
                return;
            }
            finish(run, std::nullopt, e.what());
            return;
        } catch (const std::exception& e) {
            finish(run, std::nullopt, e.what());
            return;
        }
        json::object result{{"session_id", out->id()}};
        finish(run, json::serialize(result), std::nullopt);
    }

    // Completes (result) or fails (error) the run. A database failure here leaves the
    // run to lapse and be taken over: the worker goes on.
    void finish(const rath::pg::ClaimedRun& run, std::optional<std::string> result, std::optional<std::string> error) {
        try {
            // Repeated while the database is away: a repeat after a lost acknowledgement
            // finds the run no longer running and reports it not ours, which is harmless.
            const bool ours =
                result ? await(while_database_away([&] { return queue->async_complete(run.id, owner, *result); }))
                       : await(while_database_away([&] { return queue->async_fail(run.id, owner, *error); }));
            if (!ours)
                rath::log(rath::LogLevel::warning, "rath.worker",
                          "run " + std::to_string(run.id) + " was no longer ours to finish");
        } catch (const rath::pg::PgError& e) {
            rath::log(rath::LogLevel::warning, "rath.worker",
                      "run " + std::to_string(run.id) + " could not be finished: " + e.what());
        }
    }

    // One transaction, one round trip: the output is finished.
    boost::asio::awaitable<void> persist(rath::Session s) { co_await store->async_save(std::move(s)); }

    void loop() {
        int failures = 0;  // database failures in a row
        while (!stopping.load()) {
            std::optional<rath::pg::ClaimedRun> run;
            try {
                // Read before the claim: a notification between the claim and the wait
                // is not missed.
                const std::uint64_t since = signal->seen();
                run = await(queue->async_claim(owner, lease));
                failures = 0;
                if (!run) {
                    // Short waits so that a stop request is seen promptly, and runs whose
                    // lease lapsed (nobody notifies those) are found.
                    signal->wait(rt, since, 250ms);
                    continue;
                }
            } catch (const rath::pg::PgError& e) {
                // Backoff while the database stays away, so that a long outage costs
                // neither the server nor this worker a busy loop.
                const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(
                    rath::net::backoff_delay(db_backoff(), std::min(failures++, 8)));
                rath::log(rath::LogLevel::warning, "rath.worker",
                          std::string("queue: ") + e.what() + "; again in " + std::to_string(delay.count()) + " ms");
                std::this_thread::sleep_for(delay);
                continue;
            }
            ++runs;
            std::printf("claimed %lld %d\n", static_cast<long long>(run->id), run->attempts);
            std::fflush(stdout);
            execute(*run);
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::optional<std::string> conninfo, config_path, owner;
    std::string schema = "public", queue = "default";
    long lease_ms = 30000;
    int concurrency = 1;
    rath::set_log_level(rath::LogLevel::warning);
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            usage(stdout, argv[0]);
            return 0;
        } else if (a == "--conninfo") {
            conninfo = value();
        } else if (a == "--schema") {
            schema = value();
        } else if (a == "--queue") {
            queue = value();
        } else if (a == "--config") {
            config_path = value();
        } else if (a == "--owner") {
            owner = value();
        } else if (a == "--lease-ms") {
            std::string v = value();
            char* end = nullptr;
            lease_ms = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || lease_ms < 30 || lease_ms > 86400000) fail("--lease-ms needs an integer in [30, 86400000]");
        } else if (a == "--concurrency") {
            std::string v = value();
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n < 1 || n > 1024) fail("--concurrency needs an integer in [1, 1024]");
            concurrency = static_cast<int>(n);
        } else if (a == "--log-level") {
            auto l = parse_level(value());
            if (!l) fail("--log-level is one of debug, info, warning, error, off");
            rath::set_log_level(*l);
        } else {
            std::fprintf(stderr, "rath-worker: unknown option %s\n", argv[i]);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (!conninfo) {
        if (auto env = rath::config::env("RATH_PG_CONNINFO")) conninfo = *env;
        else fail("no database: give --conninfo or set RATH_PG_CONNINFO");
    }
    if (!owner) {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        owner = std::string(host) + ":" + std::to_string(::getpid());
    }

    // Blocked before any runtime thread starts, so every thread inherits the mask and
    // only the waiting thread below sees SIGTERM/SIGINT.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
        int sig = 0;
        sigwait(&set, &sig);
        stopping.store(true);
    }).detach();

    try {
        auto config = config_path ? std::make_shared<rath::config::ConfigStore>(*config_path)
                                  : rath::config::ConfigStore::load();
        (void)rath::flow::read_config_agents(*config);  // a malformed section fails now, not per run
        auto store = rath::pg::make_postgres_session_store({.conninfo = *conninfo, .schema = schema});
        auto agents = std::make_shared<Worker::AgentCache>();
        auto signal = std::make_shared<WorkSignal>();
        // The slots share one queue: its pipelined connection carries their concurrent
        // requests together (fewer round trips and server wake-ups than a connection
        // per slot), and its one listening connection serves them all (WorkSignal).
        signal->queue = std::make_shared<rath::pg::RunQueue>(
            rath::pg::RunQueueOptions{.conninfo = *conninfo, .schema = schema, .queue = queue});
        // One slot per concurrent run, each with its own lease owner name (so that a slot
        // never mistakes another slot's claim for its own).
        std::vector<std::unique_ptr<Worker>> slots;
        for (int i = 0; i < concurrency; ++i) {
            auto w = std::make_unique<Worker>();
            w->config = config;
            w->store = store;
            w->agents = agents;
            w->signal = signal;
            w->queue = signal->queue;
            w->owner = concurrency == 1 ? *owner : *owner + "#" + std::to_string(i);
            w->lease = std::chrono::milliseconds(lease_ms);
            slots.push_back(std::move(w));
        }
        rath::async::block_on(rath::async::Runtime::default_runtime(), slots.front()->queue->async_migrate());
        std::printf("ready\n");
        std::fflush(stdout);
        std::vector<std::thread> threads;
        for (std::size_t i = 1; i < slots.size(); ++i) threads.emplace_back([&slots, i] { slots[i]->loop(); });
        slots.front()->loop();
        for (auto& t : threads) t.join();
        rath::pg::ConnectionStats sum = store->stats();
        {
            const rath::pg::ConnectionStats q = signal->queue->stats();
            sum.round_trips += q.round_trips;
            sum.requests += q.requests;
            sum.connects += q.connects;
        }
        std::uint64_t runs = 0;
        for (const auto& w : slots) runs += w->runs;
        std::printf("stats runs=%llu round_trips=%llu requests=%llu connects=%llu\n",
                    static_cast<unsigned long long>(runs), static_cast<unsigned long long>(sum.round_trips),
                    static_cast<unsigned long long>(sum.requests), static_cast<unsigned long long>(sum.connects));
        std::fflush(stdout);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rath-worker: %s\n", e.what());
        return 1;
    }
}
