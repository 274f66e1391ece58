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
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/log.hpp>
#include <rath/pg/run_queue.hpp>
#include <rath/pg/session_store.hpp>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
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
        "  --log-level LEVEL  debug|info|warning|error|off (default warning)\n"
        "  --help             this text\n"
        "\n"
        "SIGTERM/SIGINT: stop taking runs, finish the current one, exit 0. A worker that dies\n"
        "(SIGKILL) leaves its run to be taken over by another worker when the lease lapses.\n"
        "Prints \"ready\" on stdout once the queue is reachable and \"claimed <id> <attempt>\" per run.\n",
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

std::string string_field(const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || !v->is_string()) throw std::runtime_error("run payload has no string \"" + std::string(key) + "\"");
    return std::string(v->get_string());
}

struct Worker {
    rath::async::Runtime& rt = rath::async::Runtime::default_runtime();
    std::shared_ptr<rath::config::ConfigStore> config;
    std::shared_ptr<rath::pg::PostgresSessionStore> store;
    std::unique_ptr<rath::pg::RunQueue> queue;
    std::string owner;
    std::chrono::milliseconds lease{30000};
    std::map<std::string, rath::flow::Agent> agents;  // built once per name

    template <class T>
    T await(boost::asio::awaitable<T> aw) {
        return rath::async::block_on(rt, std::move(aw));
    }

    rath::flow::Agent& agent(const std::string& name) {
        auto it = agents.find(name);
        if (it != agents.end()) return it->second;
        return agents.emplace(name, rath::flow::make_config_agent(rath::flow::find_config_agent(*config, name), config))
            .first->second;
    }

    // Runs one claimed run to its end: completed, failed, or dropped when the lease was
    // lost (another worker owns it now).
    void execute(const rath::pg::ClaimedRun& run) {
        std::optional<rath::Session> out;
        try {
            json::value parsed = json::parse(run.payload);
            if (!parsed.is_object()) throw std::runtime_error("run payload is not a JSON object");
            const auto& p = parsed.get_object();
            rath::flow::Agent& a = agent(string_field(p, "agent"));
            rath::Session in = p.contains("input_session_id")
                                   ? await(store->async_load(string_field(p, "input_session_id"))).to_session()
                                   : rath::Session::from_user_message(string_field(p, "message"));
            out = a(in);
            // Heartbeats on this thread while the loop runs on the runtime.
            auto done = std::make_shared<std::promise<void>>();
            std::future<void> finished = done->get_future();
            out->when_ready([done] { done->set_value(); }, &rt);
            const auto beat = std::max<std::chrono::milliseconds>(lease / 3, 10ms);
            while (finished.wait_for(beat) != std::future_status::ready) {
                if (!await(queue->async_heartbeat(run.id, owner, lease))) {
                    rath::log(rath::LogLevel::warning, "rath.worker", "lease of run " + std::to_string(run.id) + " lost; dropping it");
                    out->cancel();
                    finished.wait();
                    return;
                }
            }
            out->synchronize();  // throws the loop's error
            await(persist(*out));
        } catch (const std::exception& e) {
            if (!await(queue->async_fail(run.id, owner, e.what())))
                rath::log(rath::LogLevel::warning, "rath.worker", "run " + std::to_string(run.id) + " was no longer ours to fail");
            return;
        }
        json::object result{{"session_id", out->id()}};
        if (!await(queue->async_complete(run.id, owner, json::serialize(result))))
            rath::log(rath::LogLevel::warning, "rath.worker", "run " + std::to_string(run.id) + " was no longer ours to complete");
    }

    boost::asio::awaitable<void> persist(rath::Session s) {
        auto writer = co_await store->async_open(s, {});
        rath::ChunkTable rows = co_await s.async_chunks();
        std::vector<rath::ChunkRowPtr> batch(rows.begin(), rows.end());
        co_await writer->async_append(0, std::move(batch));
        co_await writer->async_close();
    }

    int loop() {
        await(queue->async_migrate());
        std::printf("ready\n");
        std::fflush(stdout);
        while (!stopping.load()) {
            std::optional<rath::pg::ClaimedRun> run;
            try {
                run = await(queue->async_claim(owner, lease));
                if (!run) {
                    // Short waits so that a stop request is seen promptly.
                    (void)await(queue->async_wait_for_work(250ms));
                    continue;
                }
            } catch (const rath::pg::PgError& e) {
                rath::log(rath::LogLevel::warning, "rath.worker", std::string("queue: ") + e.what() + "; retrying");
                std::this_thread::sleep_for(500ms);
                continue;
            }
            std::printf("claimed %lld %d\n", static_cast<long long>(run->id), run->attempts);
            std::fflush(stdout);
            execute(*run);
        }
        return 0;
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::optional<std::string> conninfo, config_path, owner;
    std::string schema = "public", queue = "default";
    long lease_ms = 30000;
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
        if (const char* env = std::getenv("RATH_PG_CONNINFO"); env && *env) conninfo = env;
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
        Worker w;
        w.config = config_path ? std::make_shared<rath::config::ConfigStore>(*config_path)
                               : rath::config::ConfigStore::load();
        (void)rath::flow::read_config_agents(*w.config);  // a malformed section fails now, not per run
        w.store = rath::pg::make_postgres_session_store({.conninfo = *conninfo, .schema = schema});
        w.queue = std::make_unique<rath::pg::RunQueue>(
            rath::pg::RunQueueOptions{.conninfo = *conninfo, .schema = schema, .queue = queue});
        w.owner = *owner;
        w.lease = std::chrono::milliseconds(lease_ms);
        return w.loop();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rath-worker: %s\n", e.what());
        return 1;
    }
}
