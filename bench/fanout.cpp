// fanout: the agent fan-out benchmark (the peers' workload, shared/peers/). N
// sessions, all in flight at once; each is a user message → the model asks for
// `word_count` → the tool runs in process → the model answers "done: <count>". Two
// LLM calls per session against a fake OpenAI-compatible server on loopback.
//
//   fanout [--sessions N] [--latency-ms L] [--stream] [--base-url URL] [--threads T]
//          [--connections C] [--max-runs R] [--server-threads S] [--raw] [--no-park-probe]
//          [--timeout-s S] [--memory [--corpus FILE]]
//
// Modes: rath (default) runs each session through `rath::flow::Agent` — the ten-line
// script way, `Session out = agent(in)` in a plain loop — and reads every answer;
// --raw does the same two requests with a bare Beast client (the floor on this
// machine), C workers pulling sessions from a queue. The agent runs at most R sessions
// at once (AgentOptions::max_concurrent_runs; default R = C, as raw's C workers; 0: no
// bound), the rest waiting before they start. Without --base-url a `rath-fake-llm`
// process is started with latency L.
// --memory: every session first recalls from one local memory store shared by all of
// them (AgentOptions::memory, the default injection: top 4 over the whole store, the
// user message as the query), loaded before the run with the documents of --corpus
// (default: the SciFact corpus of ../shared/data/scifact, 5,183 documents); a
// "fanout_memory_store" line reports the load first. No park probe in this mode.
// Every final answer is checked. One JSON line goes to stdout.
//
// Parked memory is measured in a child process (this program with --park-probe):
// after a warm-up it sets the server's latency to 10 minutes through /config, starts
// N sessions, waits until all N are inside their first LLM call (on the wire or
// queued for a connection) or waiting for the agent to start them (raw: queued for a
// worker), and reports (RSS - RSS before) / N.
#include "common/fanout_raw.hpp"
#include "common/scifact.hpp"
#include "common/fanout_workload.hpp"
#include "common/report.hpp"
#include "common/server_process.hpp"

#include <rath/async.hpp>
#include <rath/flow.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/registry.hpp>
#include <rath/memory.hpp>
#include <rath/net/http_client.hpp>
#include <rath/session/registry.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/describe.hpp>

#include <deque>
#include <filesystem>

#include <dirent.h>
#include <malloc.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fo = rath::bench::fanout;
using rath::bench::now_s;

namespace {

struct Options {
    long sessions = 1000;
    long latency_ms = 50;
    bool stream = false;
    std::string base_url;  // empty: start rath-fake-llm
    int threads = 1;
    std::size_t connections = 4096;
    long max_runs = -1;  // the agent's max_concurrent_runs; -1: the connection cap, 0: unbounded
    int server_threads = 1;
    bool raw = false;
    bool in_process = false;  // diagnostic: the model answers in process (no HTTP)
    bool park_probe = false;  // internal: this process is the parked-memory probe
    bool run_probe = true;
    double timeout_s = 600;
    bool memory = false;
    std::string corpus;  // empty: the SciFact corpus
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "fanout: %s\nusage: fanout [--sessions N] [--latency-ms L] [--stream] [--base-url URL] "
                 "[--threads T] [--connections C] [--max-runs R] [--server-threads S] [--raw] [--no-park-probe] "
                 "[--timeout-s S] [--memory [--corpus FILE]]\n",
                 why.c_str());
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int k = 1; k < argc; ++k) {
        std::string a = argv[k];
        auto value = [&]() -> std::string {
            if (k + 1 >= argc) usage(a + " needs a value");
            return argv[++k];
        };
        auto number = [&](long lo, long hi) -> long {
            std::string v = value();
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < lo || n > hi) usage("bad value for " + a + ": " + v);
            return n;
        };
        if (a == "--sessions") o.sessions = number(1, 10'000'000);
        else if (a == "--latency-ms") o.latency_ms = number(0, 3'600'000);
        else if (a == "--stream") o.stream = true;
        else if (a == "--base-url") o.base_url = value();
        else if (a == "--threads") o.threads = static_cast<int>(number(1, 256));
        else if (a == "--connections") o.connections = static_cast<std::size_t>(number(1, 1'000'000));
        else if (a == "--max-runs") o.max_runs = number(0, 100'000'000);
        else if (a == "--server-threads") o.server_threads = static_cast<int>(number(1, 256));
        else if (a == "--raw") o.raw = true;
        else if (a == "--in-process") o.in_process = true;
        else if (a == "--park-probe") o.park_probe = true;
        else if (a == "--no-park-probe") o.run_probe = false;
        else if (a == "--timeout-s") o.timeout_s = static_cast<double>(number(1, 86'400));
        else if (a == "--memory") o.memory = true;
        else if (a == "--corpus") o.corpus = value();
        else if (a == "--help" || a == "-h") usage("help");
        else usage("unknown argument " + a);
    }
    if (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
    if (o.max_runs < 0) o.max_runs = static_cast<long>(o.connections);
    if (o.memory && o.raw) usage("--memory needs rath mode");
    if (o.memory) o.run_probe = false;
    return o;
}

void raise_fd_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

long open_fds() {
    long n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d)) ++n;
        closedir(d);
        n -= 3;  // ".", ".." and the directory's own descriptor
    }
    return n;
}

// VmHWM since the last reset_peak_rss() (Linux: writing 5 to clear_refs resets it).
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    return static_cast<bool>(f);
}
long vm_hwm_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    return 0;
}

// Samples RSS every 20 ms and open descriptors every 100 ms until stopped. Listing
// /proc/self/fd costs about 1 µs per descriptor, so the sampler's own CPU time is
// measured and subtracted from the process's.
class Sampler {
public:
    Sampler() : thread_([this] { loop(); }) {}
    ~Sampler() { stop(); }
    void stop() {
        if (!stop_.exchange(true)) thread_.join();
    }
    long max_fds() const { return max_fds_.load(); }
    long max_rss_kb() const { return max_rss_.load(); }
    double cpu_s() const { return cpu_s_.load(); }

private:
    void loop() {
        for (int tick = 0; !stop_.load(); ++tick) {
            sample(tick % 5 == 0);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        sample(true);
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        cpu_s_.store(static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9);
    }
    void sample(bool fds) {
        if (fds) {
            long f = open_fds();
            if (f > max_fds_.load()) max_fds_.store(f);
        }
        long r = rath::bench::rss_kb();
        if (r > max_rss_.load()) max_rss_.store(r);
    }
    std::atomic<double> cpu_s_{0};
    std::atomic<bool> stop_{false};
    std::atomic<long> max_fds_{0}, max_rss_{0};
    std::thread thread_;
};

// The session registry's size once it stops changing (the loops' last references go on
// the runtime just after their outputs settle).
std::size_t settled_registry_size() {
    std::size_t last = rath::session_registry().size();
    for (int stable = 0, i = 0; stable < 5 && i < 1000; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::size_t now = rath::session_registry().size();
        stable = now == last ? stable + 1 : 0;
        last = now;
    }
    return last;
}

// ---- rath mode -------------------------------------------------------------------

struct WordCountArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(WordCountArgs, (), (text))

// --in-process: a LoopExecutor that plays the fake server's workload without HTTP,
// so the loop, sessions and tool dispatch can be measured on their own.
class InProcessModel final : public rath::LoopExecutor {
public:
private:
    boost::asio::awaitable<void> do_complete(const rath::llm::ChatRequest& request,
                                             rath::llm::ChatResponse& r) override {
        r = rath::llm::ChatResponse{};
        r.id = "chatcmpl-local";
        r.model = std::string(fo::model);
        rath::llm::ChatChoice choice;
        const auto& last = request.messages.back();
        if (last.role == "user") {
            rath::llm::ToolCallPart call;
            call.id = "call_" + std::to_string(++seq_);
            call.function.name = "word_count";
            boost::json::object args{{"text", last.content.value_or("")}};
            call.function.arguments = boost::json::serialize(args);
            call.function.arguments_parsed = std::move(args);
            choice.finish_reason = rath::llm::FinishReason::tool_calls;
            choice.message.tool_calls = std::vector<rath::llm::ToolCallPart>{std::move(call)};
        } else {
            choice.message.content = "done: " + last.content.value_or("");
        }
        r.choices.push_back(std::move(choice));
        r.usage = rath::llm::TokenUsage{.prompt_tokens = 10, .completion_tokens = 5, .total_tokens = 15};
        co_return;
    }

    std::atomic<long> seq_{0};
};

struct RathSetup {
    std::shared_ptr<rath::net::HttpClient> http;
    rath::flow::Agent agent{nullptr};
};

// The shared store of --memory: a fresh local store in a temporary directory, loaded
// with the corpus (writes pipelined, 256 in flight) and warmed with one find.
struct MemorySetup {
    rath::memory::MemoryStorePtr store;
    std::filesystem::path dir;
    long docs = 0;
    ~MemorySetup() {
        if (store) rath::memory::make_local_memory_backend()->close(store);
        std::error_code ec;
        if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
};

std::unique_ptr<MemorySetup> make_memory(const Options& o) {
    namespace mem = rath::memory;
    auto docs = rath::bench::scifact::load_corpus(o.corpus.empty() ? rath::bench::scifact::default_dir() + "/corpus.jsonl"
                                                                  : o.corpus);
    if (docs.empty()) throw std::runtime_error("the memory corpus is empty");
    auto m = std::make_unique<MemorySetup>();
    std::string tmpl = (std::filesystem::temp_directory_path() / "rath-fanout-memory-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    m->dir = tmpl;
    m->store = mem::get_memory_backend("local")->open(
        mem::MemoryStoreSpec{.options = boost::json::object{{"path", m->dir.string()}}});
    auto& rt = rath::async::Runtime::default_runtime();
    const double t0 = now_s();
    std::deque<rath::async::Lazy<mem::MemoryResult>> inflight;
    auto settle = [&] {
        if (mem::is_failure(inflight.front().get())) throw std::runtime_error("memory write failed");
        inflight.pop_front();
    };
    for (const auto& d : docs) {
        inflight.push_back(rt.submit(m->store->async_dispatch(mem::OpWrite{"memory://resources/corpus/" + d.id, d.text})));
        if (inflight.size() >= 256) settle();
    }
    while (!inflight.empty()) settle();
    const double t_write = now_s() - t0;
    auto warm = m->store->dispatch(mem::OpFind{"warm up", std::nullopt, 4});
    if (!std::holds_alternative<mem::FindResult>(warm)) throw std::runtime_error("memory warm-up find failed");
    m->docs = static_cast<long>(docs.size());
    rath::bench::Line("fanout_memory_store")
        .add("docs", static_cast<long long>(m->docs))
        .add("load_s", t_write)
        .add("first_find_s", now_s() - t0 - t_write)
        .print();
    return m;
}

RathSetup make_rath(const Options& o, const std::string& base_url, const MemorySetup* memory = nullptr) {
    rath::llm::Provider provider;
    provider.base_url = base_url;
    provider.api_key = std::string(fo::api_key);
    provider.model = std::string(fo::model);

    rath::net::HttpClientOptions http_options;
    http_options.max_connections_per_host = o.connections;
    auto http = std::make_shared<rath::net::HttpClient>(http_options);
    rath::llm::ChatClientOptions client_options;
    client_options.http = http;

    // A quick body that never blocks: it runs on the io thread, as the peers' tools run
    // in their event loop.
    auto word_count = rath::tool::make_tool<WordCountArgs>(
        "word_count", std::string(fo::tool_description),
        [](rath::Session, WordCountArgs args) { return fo::word_count(args.text); },
        {.parallel_safe = true, .blocking = false});

    rath::flow::AgentOptions agent_options;
    agent_options.loop.provider = provider;
    agent_options.loop.tools = {word_count};
    agent_options.loop.client = rath::llm::chat_client_for(provider, client_options);
    agent_options.max_concurrent_runs = static_cast<std::size_t>(o.max_runs);
    if (o.in_process) agent_options.loop.executor = std::make_shared<InProcessModel>();
    if (memory) agent_options.memory = memory->store;
    // Streaming is what a caller asks for by watching the deltas.
    if (o.stream) agent_options.loop.on_event = [](const rath::llm::StreamDelta&) {};
    rath::flow::Agent agent(std::string(fo::instructions), std::move(agent_options));
    return {http, agent};
}

// Shared with every session's completion callback, so one that lands after a timeout
// (the run is over and reported as failed) still writes into a live tracker.
struct Tracker {
    explicit Tracker(long n) : start(static_cast<std::size_t>(n)), end(static_cast<std::size_t>(n)), remaining(n) {}
    std::vector<double> start, end;
    std::atomic<long> remaining;
    std::atomic<long> errors{0};
    std::mutex mu;
    std::condition_variable cv;
    std::string first_error;

    std::string error() {
        std::lock_guard lk(mu);
        return first_error;
    }
    void fail(const std::string& e) {
        std::lock_guard lk(mu);
        if (first_error.empty()) first_error = e;
        errors.fetch_add(1);
    }
    void finish() {
        if (remaining.fetch_sub(1) == 1) {
            std::lock_guard lk(mu);
            cv.notify_all();
        }
    }
    bool wait(double timeout_s) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return remaining.load() == 0; });
    }
};

// Checks one settled output (the transcript materializes here) and records its end.
void check_output(const rath::Session& out, long slot, long session, Tracker* t) {
    std::string error;
    try {
        auto text = out.text();  // settled: never waits
        if (!text || *text != fo::expected_final(session))
            error = "session " + std::to_string(session) + ": wrong answer '" + text.value_or("<none>") + "'";
    } catch (const std::exception& e) {
        error = e.what();
    }
    t->end[static_cast<std::size_t>(slot)] = now_s();
    if (!error.empty()) t->fail(error);
    t->finish();
}

// Starts n sessions (slot k → workload session k, or `fixed` for all) and returns at
// once. Each output is checked from a when_ready callback, not a coroutine per session.
void launch_rath(RathSetup& s, const std::shared_ptr<Tracker>& t, long n, long fixed = -1) {
    for (long k = 0; k < n; ++k) {
        const long i = fixed >= 0 ? fixed : k;
        rath::Session in = rath::Session::from_user_message(fo::user_text(i));
        t->start[static_cast<std::size_t>(k)] = now_s();
        rath::Session out = s.agent(in);  // returns at once: `out` is pending
        out.when_ready([out, k, i, t] { check_output(out, k, i, t.get()); });
    }
}

// ---- shared ----------------------------------------------------------------------

struct RunResult {
    long errors = 0;
    long ok = 0;
    double wall_s = 0;
    double cpu_s = 0;
    double sys_cpu_s = 0;
    double launch_cpu_s = 0;  // calling thread's CPU in the `agent(in)` loop (rath mode)
    std::vector<double> durations_ms;
    std::string first_error;
    bool timed_out = false;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    return v[k];
}

void warm_up(const Options& o, RathSetup* rath_setup, fo::RawClient* raw) {
    if (raw) {
        fo::RawOutcome w;
        raw->run(w, 1, fo::warmup_index);
        if (w.errors) throw std::runtime_error("warm-up failed: " + w.first_error);
    } else {
        auto w = std::make_shared<Tracker>(1);
        launch_rath(*rath_setup, w, 1, fo::warmup_index);
        if (!w->wait(o.timeout_s)) throw std::runtime_error("warm-up timed out");
        if (w->errors) throw std::runtime_error("warm-up failed: " + w->error());
    }
}

// The parked-memory probe (a child process): prints {"parked":N,"parked_kb_per_session":X}.
int park_probe(const Options& o) {
    const std::string& url = o.base_url;
    std::optional<RathSetup> rs;
    std::optional<fo::RawClient> raw;
    if (o.raw) raw.emplace(fo::RawOptions{url, o.sessions, o.stream, o.threads, o.connections});
    else rs.emplace(make_rath(o, url));
    warm_up(o, rs ? &*rs : nullptr, raw ? &*raw : nullptr);
    rath::bench::control_call(url, "POST", "/config?latency_ms=600000");
    malloc_trim(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const long base_kb = rath::bench::rss_kb();

    auto t = std::make_shared<Tracker>(o.sessions);
    std::optional<fo::RawOutcome> raw_out;
    std::thread raw_thread;
    if (raw) {
        raw_out.emplace();
        raw_thread = std::thread([&] { raw->run(*raw_out, o.sessions); });
    } else {
        launch_rath(*rs, t, o.sessions);
    }
    std::size_t wire_cap = o.connections;
    if (!o.raw && o.max_runs > 0) wire_cap = std::min(wire_cap, static_cast<std::size_t>(o.max_runs));
    const long on_wire = static_cast<long>(std::min<std::size_t>(static_cast<std::size_t>(o.sessions), wire_cap));
    const double t0 = now_s();
    long server_in_flight = 0, client_parked = 0;
    bool parked = false;
    while (now_s() - t0 < o.timeout_s) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        auto stats = rath::bench::control_call(url, "GET", "/stats");
        server_in_flight = static_cast<long>(rath::bench::json_number(stats, "in_flight", 0));
        // rath: every session's first request is inside the HTTP client (on the wire
        // or queued for a connection), or the session waits for the agent to start it.
        // raw: every session starts queued.
        if (raw) {
            client_parked = o.sessions;
        } else {
            client_parked = static_cast<long>(rs->http->stats().requests_in_flight);
            if (const auto& gate = rs->agent->admission()) client_parked += static_cast<long>(gate->waiting());
        }
        if (client_parked >= o.sessions && server_in_flight >= on_wire) {
            parked = true;
            break;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const long parked_kb = rath::bench::rss_kb();
    rath::bench::Line line("fanout_park");
    line.add("parked", static_cast<long long>(parked ? o.sessions : 0))
        .add("server_in_flight", static_cast<long long>(server_in_flight))
        .add("client_parked", static_cast<long long>(client_parked))
        .add("base_rss_kb", static_cast<long long>(base_kb))
        .add("parked_rss_kb", static_cast<long long>(parked_kb))
        .add("parked_kb_per_session", static_cast<double>(parked_kb - base_kb) / static_cast<double>(o.sessions));
    line.print();
    std::fflush(nullptr);
    _exit(parked ? 0 : 1);  // the parked sessions are abandoned with the process
}

// Runs the probe child against `url`; nullopt when it could not park every session.
std::optional<double> run_park_probe(const Options& o, const std::string& url) {
    std::vector<std::string> argv = {rath::bench::self_dir() + "/fanout", "--park-probe",     "--base-url", url,
                                     "--sessions",                        std::to_string(o.sessions),
                                     "--threads",                         std::to_string(o.threads),
                                     "--connections",                     std::to_string(o.connections),
                                     "--max-runs",                        std::to_string(o.max_runs),
                                     "--timeout-s",                       std::to_string(static_cast<long>(std::min(o.timeout_s, 3600.0)))};
    if (o.stream) argv.push_back("--stream");
    if (o.raw) argv.push_back("--raw");
    rath::bench::ChildProcess child(argv);
    std::string line = child.read_line();
    const int status = child.wait();
    if (line.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "fanout: park probe did not park every session: %s\n", line.c_str());
        return std::nullopt;
    }
    return rath::bench::json_number(line, "parked_kb_per_session");
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    raise_fd_limit();
    if (o.park_probe) {
        if (!o.raw) rath::async::Runtime::configure_default({.threads = static_cast<std::size_t>(o.threads)});
        return park_probe(o);
    }
    try {
        // Servers: ours as a child process unless --base-url names one.
        std::optional<rath::bench::FakeServerProcess> server;
        std::string url = o.base_url;
        long latency_ms = o.latency_ms;
        if (url.empty()) {
            server.emplace(o.latency_ms, o.server_threads);
            url = server->base_url();
        } else {
            latency_ms = static_cast<long>(
                rath::bench::json_number(rath::bench::control_call(url, "GET", "/stats"), "latency_ms", double(o.latency_ms)));
        }

        // Parked memory first, in a child, on its own server (or the given one, whose
        // latency is restored afterwards).
        std::optional<double> parked_kb;
        if (o.run_probe) {
            if (o.base_url.empty()) {
                rath::bench::FakeServerProcess probe_server(0, o.server_threads);
                parked_kb = run_park_probe(o, probe_server.base_url());
            } else {
                parked_kb = run_park_probe(o, url);
                rath::bench::control_call(url, "POST", "/config?latency_ms=" + std::to_string(latency_ms));
            }
        }

        std::optional<RathSetup> rs;
        std::optional<fo::RawClient> raw;
        std::unique_ptr<MemorySetup> memory;
        if (o.raw) {
            raw.emplace(fo::RawOptions{url, o.sessions, o.stream, o.threads, o.connections});
        } else {
            rath::async::Runtime::configure_default({.threads = static_cast<std::size_t>(o.threads)});
            if (o.memory) memory = make_memory(o);
            rs.emplace(make_rath(o, url, memory.get()));
        }
        warm_up(o, rs ? &*rs : nullptr, raw ? &*raw : nullptr);

        malloc_trim(0);
        rath::bench::control_call(url, "POST", "/stats/reset");
        const std::size_t registry_before = settled_registry_size();
        const bool hwm = reset_peak_rss();
        const long base_kb = rath::bench::rss_kb();
        Sampler sampler;
        RunResult r;
        const double cpu0 = rath::bench::cpu_s();
        const double sys0 = rath::bench::sys_cpu_s();
        const double t0 = now_s();
        std::vector<double> start, end;
        if (raw) {
            fo::RawOutcome out;
            raw->run(out, o.sessions);
            r.wall_s = now_s() - t0;
            r.errors = out.errors.load();
            r.first_error = out.first_error;
            start.assign(static_cast<std::size_t>(o.sessions), t0);
            end = std::move(out.end_s);
        } else {
            auto t = std::make_shared<Tracker>(o.sessions);
            timespec l0{}, l1{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &l0);
            launch_rath(*rs, t, o.sessions);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &l1);
            r.launch_cpu_s = static_cast<double>(l1.tv_sec - l0.tv_sec) + static_cast<double>(l1.tv_nsec - l0.tv_nsec) / 1e9;
            r.timed_out = !t->wait(o.timeout_s);
            r.wall_s = now_s() - t0;
            r.errors = t->errors.load() + (r.timed_out ? t->remaining.load() : 0);
            r.first_error = r.timed_out ? "timed out" : t->error();
            if (!r.timed_out) {  // (after a timeout completions may still be writing: no durations)
                start = std::move(t->start);
                end = std::move(t->end);
            }
        }
        // Read before the tallies below: raw's CPU window ends at the same point.
        const double cpu1 = rath::bench::cpu_s();
        r.sys_cpu_s = rath::bench::sys_cpu_s() - sys0;
        sampler.stop();
        r.cpu_s = cpu1 - cpu0 - sampler.cpu_s();
        r.ok = o.sessions - r.errors;
        for (std::size_t k = 0; k < start.size(); ++k)
            if (end[k] > 0) r.durations_ms.push_back((end[k] - start[k]) * 1000.0);
        long peak_kb = std::max(sampler.max_rss_kb(), hwm ? vm_hwm_kb() : 0L);
        // Every output was dropped by its completion callback: the registry is back to
        // what it held before the run (the agent's own session).
        const std::size_t registry_after = rs ? settled_registry_size() : 0;
        auto stats = rath::bench::control_call(url, "GET", "/stats");
        const double server_requests = rath::bench::json_number(stats, "requests", 0);
        const double n = static_cast<double>(o.sessions);

        rath::bench::Line line("fanout");
        line.add_str("mode", o.raw ? "raw" : o.in_process ? "rath-in-process" : o.memory ? "rath-memory" : "rath")
            .add("sessions", static_cast<long long>(o.sessions))
            .add("latency_ms", static_cast<long long>(latency_ms))
            .add("stream", o.stream)
            .add("errors", static_cast<long long>(r.errors))
            .add("wall_s", r.wall_s)
            .add("sessions_per_s", static_cast<double>(r.ok) / r.wall_s)
            .add("llm_requests_per_s", server_requests / r.wall_s)
            .add("cpu_ms_per_session", r.cpu_s * 1000.0 / n)
            .add("sys_cpu_ms_per_session", r.sys_cpu_s * 1000.0 / n)
            .add("launch_cpu_us_per_session", r.launch_cpu_s * 1e6 / n)
            .add("peak_rss_mb", static_cast<double>(peak_kb) / 1024.0)
            .add("rss_kb_per_session", static_cast<double>(peak_kb - base_kb) / n);
        if (parked_kb) line.add("parked_kb_per_session", *parked_kb);
        else line.add("parked_kb_per_session", -1.0);
        line.add("p50_session_ms", percentile(r.durations_ms, 0.5))
            .add("p99_session_ms", percentile(r.durations_ms, 0.99))
            .add("max_open_fds", static_cast<long long>(sampler.max_fds()))
            .add("threads", o.threads)
            .add("connections", static_cast<long long>(o.connections))
            .add("max_runs", static_cast<long long>(o.raw ? 0 : o.max_runs))
            .add("llm_requests", server_requests)
            .add("server_cpu_s", rath::bench::json_number(stats, "cpu_s", -1))
            .add("server_connections_peak", rath::bench::json_number(stats, "connections_peak", -1))
            .add("timed_out", r.timed_out)
            .add("memory_docs", static_cast<long long>(memory ? memory->docs : 0))
            .add("registry_before", static_cast<long long>(registry_before))
            .add("registry_after", static_cast<long long>(registry_after));
        line.print();
        if (r.errors) std::fprintf(stderr, "fanout: %ld errors; first: %s\n", r.errors, r.first_error.c_str());
        return r.errors ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fanout: %s\n", e.what());
        return 1;
    }
}
