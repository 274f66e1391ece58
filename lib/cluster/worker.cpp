// The rath-worker program (rath/cluster/worker.hpp). A run's payload (what
// rath::cluster::Client enqueues):
//   {"agent": "<name>", "input_session_id": "<uuid of a stored session>"}
//   {"agent": "<name>", "message": "<text of one user message>"}
// Its result: {"session_id": "<uuid of the stored output session>"}; a run that fails
// (unknown agent, missing input, the agent loop's error) is failed with the error text.
// Every model response and every tool call is recorded in the database (see
// DurableExecutor); a worker that takes over a run whose worker died replays them
// instead of calling the model or running the tool again, and reports a call of a tool
// that is not idempotent which the dead worker left unfinished instead of repeating it.
#include <rath/cluster/worker.hpp>

#include <rath/async/block_on.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/env.hpp>
#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/recording.hpp>
#include <rath/llm/registry.hpp>
#include <rath/log.hpp>
#include <rath/loop/executor.hpp>
#include <rath/tool/dispatch.hpp>
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
#include <cstring>
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
        "Takes runs from rath's PostgreSQL run queue and runs the agent each names: one the program\n"
        "links (rath/cluster/worker.hpp) or one of the config's \"agents\" section.\n"
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
        "Model responses and tool calls are recorded in the database as they happen (a tool call\n"
        "when it starts and when it ends): a run taken over replays the model responses instead of\n"
        "calling the model again and answers finished tool calls from their record instead of\n"
        "running them again. A tool call the dead worker started but did not finish runs again when\n"
        "the tool is idempotent (reads and whole-file writes of the built-in sandbox tools, MCP tools\n"
        "annotated readOnlyHint or idempotentHint, an agent's \"idempotent_tools\" in the config);\n"
        "any other (run_shell_command, run_code, by default a user or MCP tool) is not repeated: its\n"
        "result is {\"ok\": false, \"error_kind\": \"tool_interrupted\", \"message\": \"the call was\n"
        "interrupted by a worker failure and was not repeated: ...\", \"detail\": \"<tool>\"} and the\n"
        "model goes on from there.\n"
        "An agent's \"backend\" in the config (e.g. \"local\") is the sandbox its runs' tools use.\n"
        "An agent's \"tools\" names C++ tools the program links (rath::cluster::WorkerSetup::tools);\n"
        "a name it does not link stops the worker at start (exit 2), as does an agent defined both\n"
        "by the program and in the config. The stock rath-worker links none.\n"
        "\n"
        "On stdout: \"ready\" once the queue is reachable, \"claimed <id> <attempt>\" per run,\n"
        "\"replayed <id> <n>\" when a run reused n recorded model responses, \"replayed-tools <id> <n>\"\n"
        "when it reused n recorded tool results, \"rerun <id> <tool>\" when it runs an interrupted\n"
        "idempotent call again, \"interrupted <id> <tool>\" when it reports one that is not, and on a\n"
        "clean exit \"stats runs=<n> round_trips=<n> requests=<n> connects=<n>\": the runs it took and\n"
        "its database round trips (queue and store connections together).\n"
        "While the database is away (down, restarting) the worker retries its reads, records and\n"
        "finishes with backoff (0.1 s doubling to 2 s) for up to 60 s; a run whose database work\n"
        "still fails is left to lapse and be taken over, not failed.\n",
        to);
}

// A bad command line or setup: exit code 2 (thrown to worker_main, which owns the exit).
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& message) { throw UsageError(message); }

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

// What a run's executor prints on stdout (one line each, flushed at once).
void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

// The loop executor of one run, which makes the run durable: whatever a worker that held
// the run before completed (recorded in the database) is answered from the record, and
// everything else is recorded as it happens.
//
// Model calls: answered from the record, in order, as long as the loop asks the same
// requests again; every other call goes to the model, and its response is recorded
// before the loop sees it, so a worker that dies after it never makes that call again.
// A request that differs from the record (a tool whose result changed) ends the model
// replay: from there the run calls the model.
//
// Tool calls, numbered in the order the loop starts them: each is recorded as started
// and with its result when it ends. A call of a tool that is not idempotent is dispatched
// only once its start record is in (one round trip on the run's path); an idempotent
// one is dispatched at once and its start record written while it runs. The result is
// written while the loop goes on to its next model call, and the answer to that call is
// recorded only after it. A taken-over run answers a finished call (same index, id, tool
// and arguments) from its record; a call that was started but never finished runs again
// when the tool is idempotent (FlowToolCall::idempotent, or the agent's
// "idempotent_tools", as judged when the call started: the record keeps it) and
// otherwise gets the tool_interrupted row (rath::pg::interrupted_tool_call_message)
// instead, recorded as its result, and "interrupted <run> <tool>" on stdout. A call that
// differs from the record (or comes after a model call that did) ends the tool replay
// likewise.
class DurableExecutor final : public rath::LoopExecutor {
public:
    struct Setup {
        std::shared_ptr<rath::llm::ChatClient> client;
        rath::pg::RunQueue* queue = nullptr;
        std::int64_t run_id = 0;
        std::string owner;
        std::vector<std::pair<std::string, std::string>> llm_calls;
        std::vector<rath::pg::RecordedToolCall> tool_calls;
        std::map<std::string, bool> idempotent_tools;  // the agent's overrides
    };

    explicit DurableExecutor(Setup setup) : st_(std::make_shared<State>(std::move(setup))) {}

    std::size_t replayed_model_calls() const noexcept { return st_->replayed.load(); }
    std::size_t replayed_tool_calls() const noexcept { return st_->replayed_tools.load(); }

    // Waits for the tool results still being written; throws when one was refused (the
    // lease was lost) or failed.
    boost::asio::awaitable<void> async_flush() { return flush(st_); }

    // The same, for a run that is being given up: errors are logged, not thrown.
    boost::asio::awaitable<void> async_settle() {
        try {
            co_await flush(st_);
        } catch (const std::exception& e) {
            rath::log(rath::LogLevel::warning, "rath.worker",
                      "run " + std::to_string(st_->s.run_id) + ": a tool result was not recorded: " + e.what());
        }
    }

private:
    struct State {
        explicit State(Setup setup) : s(std::move(setup)) {
            for (auto& c : s.tool_calls) recorded_tools.emplace(c.index, c);
            dispatched.set_value();
        }
        Setup s;
        std::map<std::size_t, rath::pg::RecordedToolCall> recorded_tools;
        std::atomic<std::size_t> next_llm{0}, replayed{0}, next_tool{0}, replayed_tools{0};
        std::atomic<bool> llm_diverged{false}, tools_diverged{false}, lost{false};
        std::mutex mu;
        // A database failure while recording a call's start: the loop turns what a
        // dispatch throws into a tool-result row and goes on, so the run is failed at its
        // next model call instead (a step that cannot be recorded must not be taken).
        std::exception_ptr broken;
        std::vector<rath::async::Lazy<bool>> pending;  // tool results being written
        // Set once the latest call started by the loop has taken its dispatch lane (or
        // will not dispatch): the next call dispatches only after it, so the lanes see
        // the calls in the loop's order although each first awaits its own start record.
        rath::async::Lazy<void> dispatched;

        rath::Error lease_lost() {
            lost.store(true);
            return rath::Error("run " + std::to_string(s.run_id) + ": the lease was lost");
        }
    };

    // Sets a call's "dispatched" signal on every path, the frame's destruction included
    // (a call the loop dropped before it ran must not hold the next one).
    struct Signal {
        std::optional<rath::async::Lazy<void>> l;
        explicit Signal(rath::async::Lazy<void> lazy) : l(std::move(lazy)) {}
        Signal(Signal&& o) noexcept : l(std::exchange(o.l, std::nullopt)) {}
        Signal& operator=(Signal&&) = delete;
        ~Signal() { set(); }
        void set() {
            if (l) (void)l->try_set_value();
        }
    };

    static boost::asio::awaitable<void> flush(std::shared_ptr<State> st) {
        std::vector<rath::async::Lazy<bool>> pending;
        {
            std::lock_guard lk(st->mu);
            pending.swap(st->pending);
        }
        std::exception_ptr first;
        bool refused = false;
        for (auto& p : pending) {
            try {
                const bool held = co_await p.async_get();
                if (!held) refused = true;
            } catch (...) {
                if (!first) first = std::current_exception();
            }
        }
        if (first) std::rethrow_exception(first);
        if (refused) throw st->lease_lost();
    }

    boost::asio::awaitable<void> do_complete(const rath::llm::ChatRequest& request,
                                             rath::llm::ChatResponse& out) override {
        auto st = st_;
        if (st->lost.load()) throw st->lease_lost();
        {
            std::lock_guard lk(st->mu);
            if (st->broken) std::rethrow_exception(st->broken);
        }
        const std::size_t index = st->next_llm.fetch_add(1);
        json::object body = rath::llm::request_to_json(request, st->s.client->provider().model.value_or(""));
        if (index < st->s.llm_calls.size() && !st->llm_diverged.load()) {
            json::value was = json::parse(st->s.llm_calls[index].first);
            if (was == json::value(body)) {
                out = rath::llm::response_from_json(json::parse(st->s.llm_calls[index].second).as_object());
                st->replayed.fetch_add(1);
                co_await flush(st);
                co_return;
            }
            st->llm_diverged.store(true);
            st->tools_diverged.store(true);  // the tool calls from here on are new ones too
            rath::log(rath::LogLevel::warning, "rath.worker",
                      "run " + std::to_string(st->s.run_id) + ": model call " + std::to_string(index) +
                          " differs from the recorded one; calling the model from here on");
        }
        co_await st->s.client->async_complete(request, out);
        // The tool results this request carries are on record before its answer is.
        co_await flush(st);
        // Kept until it is recorded: a database restart here must not cost the call.
        const std::string req_text = json::serialize(body);
        const std::string resp_text = json::serialize(rath::llm::response_to_json(out));
        const bool held = co_await while_database_away(
            [&] { return st->s.queue->async_record_llm_call(st->s.run_id, st->s.owner, index, req_text, resp_text); });
        if (!held) throw st->lease_lost();
    }

    // Not a coroutine: the call's number and its place in the dispatch order are taken
    // when the loop initiates it, in call order.
    boost::asio::awaitable<std::string> do_dispatch_tool_call(rath::Session out, std::string call_id,
                                                              rath::tool::FlowToolPtr tool,
                                                              json::object arguments) override {
        const std::size_t index = st_->next_tool.fetch_add(1);
        rath::async::Lazy<void> before, mine;
        {
            std::lock_guard lk(st_->mu);
            before = st_->dispatched;
            st_->dispatched = mine;
        }
        return run_tool_call(st_, index, std::move(before), Signal(std::move(mine)), std::move(out),
                             std::move(call_id), std::move(tool), std::move(arguments));
    }

    // The loop always passes the call's id; a call without one is recorded with "".
    boost::asio::awaitable<std::string> do_dispatch_tool(rath::Session out, rath::tool::FlowToolPtr tool,
                                                         json::object arguments) override {
        return do_dispatch_tool_call(std::move(out), std::string(), std::move(tool), std::move(arguments));
    }

    static boost::asio::awaitable<std::string> run_tool_call(std::shared_ptr<State> st, std::size_t index,
                                                             rath::async::Lazy<void> before, Signal mine,
                                                             rath::Session out, std::string call_id,
                                                             rath::tool::FlowToolPtr tool, json::object arguments) {
        const std::string name = tool->name();
        const std::string run = std::to_string(st->s.run_id);
        bool idempotent = tool->idempotent();
        if (auto o = st->s.idempotent_tools.find(name); o != st->s.idempotent_tools.end()) idempotent = o->second;

        const rath::pg::RecordedToolCall* rec = nullptr;
        if (auto it = st->recorded_tools.find(index); it != st->recorded_tools.end() && !st->tools_diverged.load()) {
            const auto& r = it->second;
            if (r.call_id == call_id && r.name == name && json::parse(r.arguments) == json::value(arguments)) {
                rec = &r;
            } else {
                st->tools_diverged.store(true);
                rath::log(rath::LogLevel::warning, "rath.worker",
                          "run " + run + ": tool call " + std::to_string(index) +
                              " differs from the recorded one; running the tools from here on");
            }
        }
        if (rec && rec->result) {
            co_await before.async_wait(boost::asio::use_awaitable);
            mine.set();
            st->replayed_tools.fetch_add(1);
            co_return *rec->result;
        }
        if (rec && !rec->idempotent) {
            // Started by a worker that died before it finished: it may have taken effect,
            // so it is not run again; the model is told.
            co_await before.async_wait(boost::asio::use_awaitable);
            mine.set();
            std::string content =
                rath::tool::failure_content("tool_interrupted", rath::pg::interrupted_tool_call_message, name);
            say("interrupted " + run + " " + name);
            const bool held = co_await while_database_away(
                [&] { return st->s.queue->async_finish_tool_call(st->s.run_id, st->s.owner, index, content, true); });
            if (!held) throw st->lease_lost();
            co_return content;
        }
        if (rec) say("rerun " + run + " " + name);  // idempotent, cut short: once more
        rath::pg::RecordedToolCall started{.index = index,
                                           .call_id = call_id,
                                           .name = name,
                                           .arguments = json::serialize(arguments),
                                           .idempotent = idempotent};
        auto* rt = rath::async::current_runtime();
        rath::async::Runtime& runtime = rt ? *rt : rath::async::Runtime::default_runtime();
        std::optional<rath::async::Lazy<bool>> start_written;
        if (idempotent) {
            // Running it once more is harmless, so it need not wait for its start record:
            // the record is written while the call runs (a worker that dies first leaves
            // no record, and the takeover runs the call, as it would with one).
            start_written = runtime.submit(st->s.queue->async_start_tool_call(st->s.run_id, st->s.owner, std::move(started)));
            std::lock_guard lk(st->mu);
            st->pending.push_back(*start_written);
        } else {
            // Recorded before it runs: a takeover must know that it may have taken effect.
            bool held = false;
            try {
                held = co_await st->s.queue->async_start_tool_call(st->s.run_id, st->s.owner, std::move(started));
            } catch (const rath::pg::PgError&) {
                std::lock_guard lk(st->mu);
                if (!st->broken) st->broken = std::current_exception();
                throw;
            }
            if (!held) throw st->lease_lost();
        }
        co_await before.async_wait(boost::asio::use_awaitable);
        auto dispatch = rath::tool::async_dispatch_flow_tool(std::move(out), std::move(tool), std::move(arguments), rt);
        mine.set();  // this call has its lane place: the next may take its own
        rath::tool::ToolDispatchResult r = co_await std::move(dispatch);
        // Written while the loop goes on; the next model call's answer waits for it.
        auto written = runtime.submit(record_result(st, index, std::move(start_written), r.content));
        {
            std::lock_guard lk(st->mu);
            st->pending.push_back(std::move(written));
        }
        co_return std::move(r.content);
    }

    // Records a call's result once its start record (when that was still being written)
    // is in; false when the run was no longer ours.
    static boost::asio::awaitable<bool> record_result(std::shared_ptr<State> st, std::size_t index,
                                                      std::optional<rath::async::Lazy<bool>> started,
                                                      std::string content) {
        // Each co_await a statement of its own: GCC 12 miscompiles one inside && (SIGILL).
        if (started) {
            const bool held = co_await started->async_get();
            if (!held) co_return false;
        }
        // Idempotent (the same row again): safe to repeat while the database is away.
        const bool held = co_await while_database_away(
            [&] { return st->s.queue->async_finish_tool_call(st->s.run_id, st->s.owner, index, content); });
        co_return held;
    }

    std::shared_ptr<State> st_;
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
    // An agent as the runs use it, from the program's setup or the config.
    struct AgentEntry {
        std::string system_prompt;
        std::optional<std::string> backend;
        std::map<std::string, bool> idempotent_tools;
        rath::flow::AgentOptions options;
        std::shared_ptr<rath::llm::ChatClient> client;  // shared by the runs: one connection pool
    };
    struct AgentCache {
        std::mutex mu;
        std::map<std::string, AgentEntry> by_name;  // resolved once per name
        const rath::cluster::WorkerSetup* setup = nullptr;
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
        const rath::cluster::WorkerSetup& setup = *agents->setup;
        if (auto linked = setup.agents.find(name); linked != setup.agents.end()) {
            const rath::cluster::WorkerAgent& a = linked->second;
            e.system_prompt = a.system_prompt;
            e.backend = a.backend;
            e.idempotent_tools = a.idempotent_tools;
            e.options = a.options;
            if (rath::llm::same_settings(e.options.loop.provider, rath::llm::Provider{})) {
                e.options.loop.provider = rath::llm::Provider::from_config(std::nullopt, config);
                if (e.options.model) e.options.loop.provider.model = e.options.model;
            }
        } else {
            const rath::flow::ConfigAgent c = rath::flow::find_config_agent(*config, name);
            e.system_prompt = c.system_prompt;
            e.backend = c.backend;
            e.idempotent_tools = c.idempotent_tools;
            e.options = rath::flow::config_agent_options(c, config, setup.tools);
        }
        e.client = rath::llm::chat_client_for(e.options.loop.provider);
        return agents->by_name.emplace(name, std::move(e)).first->second;
    }

    // Runs one claimed run to its end: completed, failed, or dropped when the lease was
    // lost (another worker owns it now).
    void execute(const rath::pg::ClaimedRun& run) {
        std::optional<rath::Session> out;
        std::shared_ptr<DurableExecutor> exec;
        // Tool results still being written are waited for before the run is given up,
        // and the run's sandbox is closed.
        auto release = [&] {
            if (exec) await(exec->async_settle());
            if (out) out->close_sandbox();
        };
        try {
            json::value parsed = json::parse(run.payload);
            if (!parsed.is_object()) throw std::runtime_error("run payload is not a JSON object");
            const auto& p = parsed.get_object();
            const AgentEntry e = agent_entry(string_field(p, "agent"));
            // The run's own agent: its executor replays what an earlier holder of the run
            // recorded and records the rest. A first claim had no earlier holder.
            std::vector<std::pair<std::string, std::string>> llm_calls;
            std::vector<rath::pg::RecordedToolCall> tool_calls;
            if (run.attempts > 1) {
                llm_calls = await(while_database_away([&] { return queue->async_llm_calls(run.id); }));
                tool_calls = await(while_database_away([&] { return queue->async_tool_calls(run.id); }));
            }
            exec = std::make_shared<DurableExecutor>(DurableExecutor::Setup{.client = e.client,
                                                                            .queue = queue.get(),
                                                                            .run_id = run.id,
                                                                            .owner = owner,
                                                                            .llm_calls = std::move(llm_calls),
                                                                            .tool_calls = std::move(tool_calls),
                                                                            .idempotent_tools = e.idempotent_tools});
            rath::flow::AgentOptions options = e.options;
            options.loop.executor = exec;
            rath::flow::Agent a(e.system_prompt, options);
            rath::Session in = p.contains("input_session_id")
                                   ? await(while_database_away([&] {
                                         return store->async_load(string_field(p, "input_session_id"));
                                     })).to_session()
                                   : rath::Session::from_user_message(string_field(p, "message"));
            if (e.backend) in.to(*e.backend);
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
                    release();
                    return;
                }
            }
            out->synchronize();  // throws the loop's error
            await(exec->async_flush());
            if (exec->replayed_model_calls() > 0)
                say("replayed " + std::to_string(run.id) + " " + std::to_string(exec->replayed_model_calls()));
            if (exec->replayed_tool_calls() > 0)
                say("replayed-tools " + std::to_string(run.id) + " " + std::to_string(exec->replayed_tool_calls()));
            await(persist(*out));
        } catch (const rath::pg::PgError& e) {
            if (database_away(e)) {
                // Not the run's fault: left to lapse and be taken again (its recorded
                // model calls are replayed then).
                rath::log(rath::LogLevel::warning, "rath.worker",
                          "run " + std::to_string(run.id) + " left to lapse, the database is away: " + e.what());
                release();
                return;
            }
            release();
            finish(run, std::nullopt, e.what());
            return;
        } catch (const std::exception& e) {
            release();
            finish(run, std::nullopt, e.what());
            return;
        }
        release();
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
            say("claimed " + std::to_string(run->id) + " " + std::to_string(run->attempts));
            execute(*run);
        }
    }
};

// worker_main without the handling of UsageError.
int run_worker(int argc, char** argv, const char* program, const rath::cluster::WorkerSetup& setup) {
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
            usage(stdout, program);
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
            auto l = rath::parse_log_level(value());
            if (!l) fail("--log-level is one of debug, info, warning, error, off");
            rath::set_log_level(*l);
        } else {
            std::fprintf(stderr, "%s: unknown option %s\n", program, argv[i]);
            usage(stderr, program);
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
        // A malformed section, a name in both places or a tool the program lacks fails now,
        // not per run.
        for (const auto& c : rath::flow::read_config_agents(*config)) {
            if (setup.agents.contains(c.name))
                fail("agent '" + c.name + "' is defined both by the program and in " + config->path().string());
            try {
                (void)rath::flow::linked_config_tools(c, *config, setup.tools);
            } catch (const rath::config::ConfigLookupError& e) {
                fail(e.what());
            } catch (const rath::config::ConfigError& e) {
                fail(e.what());
            }
        }
        auto store = rath::pg::make_postgres_session_store({.conninfo = *conninfo, .schema = schema});
        auto agents = std::make_shared<Worker::AgentCache>();
        agents->setup = &setup;
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
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 1;
    }
}

}  // namespace

namespace rath::cluster {

int worker_main(int argc, char** argv, WorkerSetup setup) {
    // Messages name the program as its user called it, without the directory.
    const char* program = argc > 0 && argv[0] && *argv[0] ? argv[0] : "rath-worker";
    if (const char* slash = std::strrchr(program, '/'); slash && slash[1]) program = slash + 1;
    try {
        return run_worker(argc, argv, program, setup);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 2;
    }
}

}  // namespace rath::cluster
