// examples/13_agent_service as a real process against rath's fake LLM server: every
// route, cancellation by a dropped client, by DELETE and by the run deadline, 503 under
// overload, 429 for a tenant's concurrency and token budget, the traceparent reaching
// the LLM and an MCP server, MCP metrics, and a SIGTERM that drains (503 meanwhile),
// cancels and exits 0.
#include "support/wait.hpp"
#include "fake_llm/http_client.hpp"
#include "mcp/http_test_server.hpp"
#include "support/temp_dir.hpp"

#include <rath/fake_llm/server.hpp>
#include <rath/memory.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace json = boost::json;
using namespace std::chrono_literals;
using rath::fake_llm::test::HttpClient;

namespace {

using rath::test::eventually;

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The service process: stdout on a pipe (its "listening on" line), stderr (its log
// lines) in a file.
class ServiceProcess {
public:
    ServiceProcess(const std::filesystem::path& config, const std::string& llm_url, const std::filesystem::path& log) {
        const std::string bin = std::string(RATH_BINARY_DIR) + "/bin/13_agent_service";
        int out[2];
        REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        std::vector<std::string> args{bin, config.string(), "--port", "0", "--llm-url", llm_url};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const int rc = ::posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(out[1]);
        REQUIRE_MESSAGE(rc == 0, "cannot start " << bin);
        std::string line;
        char c;
        while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
        ::close(out[0]);
        const std::string prefix = "listening on http://127.0.0.1:";
        REQUIRE_MESSAGE(line.rfind(prefix, 0) == 0, "the service said: " << line);
        port_ = static_cast<std::uint16_t>(std::stoi(line.substr(prefix.size())));
    }
    ~ServiceProcess() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    std::uint16_t port() const { return port_; }
    void signal(int sig) { ::kill(pid_, sig); }
    // The exit status (-1 when it did not exit within `limit`).
    int wait_exit(std::chrono::milliseconds limit) {
        int status = 0;
        const auto until = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < until) {
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(10ms);
        }
        return -1;
    }

private:
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
};

// A streamed POST on its own connection, read incrementally: the test sees the run id
// (and the first events) while the run is still going, and may drop the connection.
class StreamClient {
public:
    StreamClient(std::uint16_t port, const std::string& message, const std::string& tenant = "default")
        : socket_(io_) {
        socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        const std::string body = json::serialize(json::object{{"message", message}, {"stream", true}});
        const std::string req = "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "x-tenant: " + tenant + "\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\n\r\n" + body;
        boost::asio::write(socket_, boost::asio::buffer(req));
        boost::asio::read_until(socket_, buf_, "\r\n\r\n");
        std::string head = take(buf_.size());
        status_ = std::stoi(head.substr(9, 3));
        auto pos = head.find("X-Run-Id: ");
        if (pos == std::string::npos) pos = head.find("x-run-id: ");
        if (pos != std::string::npos) run_id_ = head.substr(pos + 10, head.find("\r\n", pos) - pos - 10);
        seen_ = head.substr(head.find("\r\n\r\n") + 4);
    }
    int status() const { return status_; }
    const std::string& run_id() const { return run_id_; }
    // Reads until `text` has arrived or the connection ends; everything seen so far.
    const std::string& read_until(const std::string& text) {
        boost::system::error_code ec;
        while (seen_.find(text) == std::string::npos) {
            boost::asio::read(socket_, buf_, boost::asio::transfer_at_least(1), ec);
            seen_ += take(buf_.size());
            if (ec) break;
        }
        return seen_;
    }
    void drop() {
        boost::system::error_code ec;
        socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
        socket_.close(ec);
    }

private:
    std::string take(std::size_t n) {
        std::string s(boost::asio::buffers_begin(buf_.data()), boost::asio::buffers_begin(buf_.data()) + static_cast<long>(n));
        buf_.consume(n);
        return s;
    }
    boost::asio::io_context io_;
    boost::asio::ip::tcp::socket socket_;
    boost::asio::streambuf buf_;
    int status_ = 0;
    std::string run_id_;
    std::string seen_;
};

// The fake LLM of a fixture: 5 ms per answer unless told otherwise, and it keeps the
// traceparent field of every request it reads.
rath::fake_llm::ServerOptions recording(rath::fake_llm::ServerOptions o) {
    o.record_headers = {"traceparent"};
    return o;
}

struct Fixture {
    // `extra` is more top-level keys of the service's config.json ("k": v, ...).
    explicit Fixture(const std::string& limits = R"({"max_concurrent_runs": 64, "max_queued_runs": 64})",
                     long shutdown_ms = 10000, const std::string& extra = {},
                     rath::fake_llm::ServerOptions llm_options = {.latency = 5ms})
        : llm(recording(std::move(llm_options))) {
        llm.start();
        persist = dir.path() / "runs";
        std::ofstream(dir.path() / "config.json") << R"({
  "provider": {"kind": "openai", "api_key": "sk-fake-local", "model": "fake-model"},
  "limits": )" << limits << R"(,
  "tenants": {"header": "x-tenant", "overrides": {"trial": {"max_concurrent_runs": 1, "token_budget": 1000000},
                                                  "small": {"token_budget": 30}}},
  "persist_dir": ")" << persist.string() << R"(",
  "shutdown": {"deadline_ms": )" << shutdown_ms << R"(})" << (extra.empty() ? "" : ",\n  " + extra) << R"(
})";
        log = dir.path() / "service.log";
        service.emplace(dir.path() / "config.json", llm.base_url(), log);
    }
    json::value get_json(const std::string& target) {
        HttpClient c(service->port());
        auto r = c.get(target);
        REQUIRE(r.status == 200);
        return json::parse(r.body);
    }
    rath::test::TempDir dir;
    rath::fake_llm::Server llm;
    std::filesystem::path persist, log;
    std::optional<ServiceProcess> service;
};

std::string status_of(Fixture& f, const std::string& id) {
    HttpClient c(f.service->port());
    auto r = c.get("/v1/runs/" + id);
    if (r.status != 200) return "http " + std::to_string(r.status);
    return std::string(json::parse(r.body).at("status").as_string());
}

}  // namespace

TEST_SUITE("examples/agent_service") {

TEST_CASE("a run answers with the agent's answer; GET, /healthz and /metrics report it with its trace context") {
    Fixture f;
    HttpClient c(f.service->port());
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto r = c.post("/v1/runs", R"({"message": "please count the words of session 1"})", {{"traceparent", tp}});
    REQUIRE(r.status == 200);
    auto body = json::parse(r.body);
    CHECK(body.at("status").as_string() == "ok");
    CHECK(body.at("answer").as_string() == "done: 7");
    const std::string id(body.at("id").as_string());
    CHECK(r.headers["x-run-id"] == id);
    CHECK(body.at("usage").at("prompt_tokens").to_number<int>() > 0);

    auto run = f.get_json("/v1/runs/" + id);
    CHECK(run.at("status").as_string() == "ok");
    CHECK(run.at("persisted").as_string() == "closed");
    auto& rows = run.at("transcript").as_array();
    REQUIRE(rows.size() == 4);  // user, assistant (tool call), tool result, assistant
    CHECK(rows[0].at("kind").as_string() == "user");
    CHECK(rows[2].at("kind").as_string() == "tool_result");
    // The run's trace context continues the caller's trace, with its own span id.
    auto& extras = run.at("lineage_extras").as_object();
    CHECK(extras.at("traceparent.incoming").as_string() == tp);
    const std::string out(extras.at("traceparent").as_string());
    CHECK(out.substr(0, 36) == tp.substr(0, 36));
    CHECK(out.substr(36, 16) != tp.substr(36, 16));
    // Both model requests of the run reached the LLM server with the run's traceparent.
    const auto seen = f.llm.recorded_requests();
    REQUIRE(seen.size() == 2);
    for (const auto& rec : seen) {
        CHECK(rec.target == "/v1/chat/completions");
        CHECK(rec.header("traceparent") == std::optional<std::string>(out));
    }

    auto health = c.get("/healthz");
    CHECK(health.status == 200);
    CHECK(health.body == "ok\n");
    auto m = c.get("/metrics");
    REQUIRE(m.status == 200);
    CHECK(m.headers["content-type"].find("text/plain; version=0.0.4") == 0);
    CHECK(m.body.find("rath_service_runs_finished_total{outcome=\"ok\"} 1\n") != std::string::npos);
    CHECK(m.body.find("rath_llm_request_duration_seconds_count{provider=\"openai\",model=\"fake-model\",outcome=\"ok\"} 2\n") !=
          std::string::npos);
    CHECK(m.body.find("rath_tool_calls_total{tool=\"word_count\",outcome=\"ok\"} 1\n") != std::string::npos);
    CHECK(m.body.find("rath_llm_tokens_total{provider=\"openai\",model=\"fake-model\",direction=\"in\"}") != std::string::npos);
    CHECK(m.body.find("rath_http_pool_connections ") != std::string::npos);
    CHECK(m.body.find("rath_sandboxes_open ") != std::string::npos);
    CHECK(m.body.find("process_resident_memory_bytes ") != std::string::npos);
    // No MCP server and no memory store: their families are left out.
    CHECK(m.body.find("rath_mcp_calls_total") == std::string::npos);
    CHECK(m.body.find("rath_memory_ops_total") == std::string::npos);
    // One JSON log line per run, through the project's logger.
    CHECK(eventually([&] { return read_file(f.log).find("\"event\":\"run\",\"id\":\"" + id + "\"") != std::string::npos; }));

    CHECK(c.get("/v1/runs/00000000-0000-0000-0000-000000000000").status == 404);
    CHECK(c.get("/v1/runs/..%2F..%2Fetc").status == 404);
    CHECK(c.post("/v1/runs", "{not json").status == 400);
    CHECK(c.request("PUT", "/v1/runs").status == 405);
}

TEST_CASE("stream=true answers as server-sent events: the run id, the deltas, then done") {
    Fixture f;
    StreamClient s(f.service->port(), "please count the words of session 3 w w w");
    REQUIRE(s.status() == 200);
    const std::string all = s.read_until("event: done");
    auto events = rath::fake_llm::test::parse_sse(all.substr(all.find("event: run")));
    REQUIRE(events.size() >= 3);
    CHECK(events.front().event == "run");
    CHECK(json::parse(events.front().data).at("id").as_string() == s.run_id());
    std::string streamed;
    for (auto& e : events)
        if (e.event == "delta") streamed += json::parse(e.data).at("content").as_string();
    CHECK(streamed == "done: 10");
    auto done = std::find_if(events.begin(), events.end(), [](auto& e) { return e.event == "done"; });
    REQUIRE(done != events.end());
    CHECK(json::parse(done->data).at("answer").as_string() == "done: 10");
}

TEST_CASE("a client that goes away cancels its run and its in-flight LLM request") {
    Fixture f;
    // Long enough to drop the client in the middle of the model call on a loaded machine;
    // short enough for the fake server to answer within the checks' 10 s and then find the
    // connection closed.
    f.llm.set_latency(4s);
    StreamClient s(f.service->port(), "please count the words of session 2");
    REQUIRE(s.status() == 200);
    const std::string id = s.run_id();
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 1; }));
    s.drop();
    CHECK(eventually([&] { return status_of(f, id) == "cancelled"; }));
    // The service closed that request's connection rather than keep it for an answer
    // nobody reads (a kept-alive one would stay open in its pool).
    CHECK(eventually([&] { return f.llm.stats().connections == 0 && f.llm.stats().in_flight == 0; }));
    CHECK(f.llm.stats().connections_total == 1);
    // The persisted record holds what was published: the user row, no trailer.
    auto run = f.get_json("/v1/runs/" + id);
    CHECK(run.at("persisted").as_string() == "partial");
    CHECK(run.at("transcript").as_array().size() == 1);
}

TEST_CASE("DELETE cancels a running run, whose stream then ends with the status cancelled") {
    Fixture f;
    f.llm.set_latency(10s);
    StreamClient s(f.service->port(), "please count the words of session 4");
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 1; }));
    HttpClient c(f.service->port());
    CHECK(status_of(f, s.run_id()) == "running");
    auto del = c.request("DELETE", "/v1/runs/" + s.run_id());
    CHECK(del.status == 202);
    const std::string all = s.read_until("event: done");
    CHECK(all.find("\"status\":\"cancelled\"") != std::string::npos);
    CHECK(status_of(f, s.run_id()) == "cancelled");
    CHECK(c.request("DELETE", "/v1/runs/" + s.run_id()).status == 409);
    CHECK(c.request("DELETE", "/v1/runs/no-such-run").status == 404);
    HttpClient m(f.service->port());
    CHECK(m.get("/metrics").body.find("rath_service_runs_finished_total{outcome=\"cancelled\"} 1\n") != std::string::npos);
}

TEST_CASE("beyond its concurrent runs and its queue the service answers 503 with Retry-After, and a tenant over its bound 429") {
    Fixture f(R"({"max_concurrent_runs": 2, "max_queued_runs": 2, "retry_after_seconds": 3})");
    f.llm.set_latency(10s);
    std::vector<std::unique_ptr<StreamClient>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(std::make_unique<StreamClient>(f.service->port(), "please count the words of session " + std::to_string(i)));
        CHECK(held.back()->status() == 200);
    }
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 2; }));  // two run, two wait at the gate
    HttpClient c(f.service->port());
    auto r = c.post("/v1/runs", R"({"message": "one too many"})");
    CHECK(r.status == 503);
    CHECK(r.headers["retry-after"] == "3");
    auto m = c.get("/metrics");
    CHECK(m.body.find("rath_service_runs_in_flight 2\n") != std::string::npos);
    CHECK(m.body.find("rath_service_runs_queued 2\n") != std::string::npos);
    CHECK(m.body.find("rath_service_runs_rejected_total{reason=\"overloaded\"} 1\n") != std::string::npos);
    for (auto& h : held) h->drop();
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 0; }));
    f.llm.set_latency(10s);
    StreamClient trial(f.service->port(), "tenant run", "trial");
    CHECK(trial.status() == 200);
    HttpClient t(f.service->port());
    auto second = t.post("/v1/runs", R"({"message": "second trial run"})", {{"x-tenant", "trial"}});
    CHECK(second.status == 429);
    CHECK(second.headers.count("retry-after") == 1);
}

TEST_CASE("SIGTERM stops admitting runs, cancels what outlives the deadline, flushes its record and exits 0") {
    Fixture f(R"({"max_concurrent_runs": 8, "max_queued_runs": 8})", 300);
    f.llm.set_latency(30s);
    StreamClient s(f.service->port(), "please count the words of session 5");
    const std::string id = s.run_id();
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 1; }));
    const auto t0 = std::chrono::steady_clock::now();
    f.service->signal(SIGTERM);
    const std::string all = s.read_until("event: done");
    CHECK(all.find("\"status\":\"shutdown\"") != std::string::npos);
    CHECK(f.service->wait_exit(10s) == 0);
    CHECK(std::chrono::steady_clock::now() - t0 < 8s);
    // The record on disk is the partial file with the user row.
    CHECK(std::filesystem::exists(f.persist / (id + ".jsonl.__partial__")));
}

TEST_CASE("a run's MCP tool calls carry its traceparent to the MCP server, and /metrics counts them by server and outcome") {
    rath::test::McpHttpTestServer mcp({.get_stream = false});
    Fixture f(R"({"max_concurrent_runs": 8, "max_queued_runs": 8})", 10000,
              R"("agent": {"mcp": ["tools"]}, "mcpServers": {"tools": {"url": ")" + mcp.url() + R"("}})",
              {.latency = 5ms,
               .mode = rath::fake_llm::Mode::script,
               .script = R"({"rules": [
                 {"match": {"role": "user"}, "respond": {"tool_calls": [{"name": "echo", "arguments": {"text": "{{last}}"}}]}},
                 {"match": {"role": "tool"}, "respond": {"text": "The tool said: {{last}}"}}]})"});
    HttpClient c(f.service->port());
    const std::string tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    auto r = c.post("/v1/runs", R"({"message": "echo this"})", {{"traceparent", tp}});
    REQUIRE(r.status == 200);
    auto body = json::parse(r.body);
    CHECK(std::string(body.at("answer").as_string()).find("The tool said: ") == 0);
    const std::string id(body.at("id").as_string());
    const std::string out(f.get_json("/v1/runs/" + id).at("lineage_extras").at("traceparent").as_string());
    CHECK(out.substr(0, 36) == tp.substr(0, 36));

    auto calls = mcp.rpc("tools/call");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].header("traceparent") == out);
    CHECK(json::parse(calls[0].body).at("params").at("_meta").at("traceparent").as_string() == out);
    for (const auto& rec : f.llm.recorded_requests()) CHECK(rec.header("traceparent") == std::optional<std::string>(out));

    auto m = c.get("/metrics");
    CHECK(m.body.find("# TYPE rath_mcp_calls_total counter\nrath_mcp_calls_total{server=\"tools\",outcome=\"ok\"} 1\n") !=
          std::string::npos);
    CHECK(m.body.find("rath_mcp_call_seconds_total{server=\"tools\",outcome=\"ok\"} ") != std::string::npos);
    CHECK(m.body.find("rath_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 1\n") != std::string::npos);
    CHECK(m.body.find("rath_memory_ops_total") == std::string::npos);
}

TEST_CASE("a tenant's token budget stops the run that crosses it after that model call (429, tenant_budget), "
          "and refuses the tenant's next run") {
    Fixture f;
    HttpClient c(f.service->port());
    // The tenant "small" may spend 30 tokens; the run's first model call alone spends more.
    auto r = c.post("/v1/runs", R"({"message": "please count the words of session 6"})", {{"x-tenant", "small"}});
    CHECK(r.status == 429);
    auto body = json::parse(r.body);
    CHECK(body.at("status").as_string() == "tenant_budget");
    const auto& usage = body.at("usage");
    CHECK(usage.at("prompt_tokens").to_number<int>() + usage.at("completion_tokens").to_number<int>() > 30);
    CHECK(f.llm.stats().requests == 1);  // no second model call
    const std::string id(body.at("id").as_string());
    auto run = f.get_json("/v1/runs/" + id);
    CHECK(run.at("status").as_string() == "tenant_budget");
    CHECK(run.at("persisted").as_string() == "partial");
    CHECK(run.at("transcript").as_array().size() == 1);  // the user row; the crossing answer is not appended

    auto refused = c.post("/v1/runs", R"({"message": "another"})", {{"x-tenant", "small"}});
    CHECK(refused.status == 429);
    CHECK(refused.headers.count("retry-after") == 1);
    CHECK(refused.body.find("budget") != std::string::npos);
    CHECK(f.llm.stats().requests == 1);
    // Other tenants are not affected.
    CHECK(c.post("/v1/runs", R"({"message": "please count the words of session 7"})").status == 200);
    auto m = c.get("/metrics");
    CHECK(m.body.find("rath_service_runs_rejected_total{reason=\"tenant_budget\"} 1\n") != std::string::npos);
    CHECK(m.body.find("rath_service_runs_finished_total{outcome=\"tenant_budget\"} 1\n") != std::string::npos);
}

TEST_CASE("a run past its deadline answers 504, its in-flight LLM request is aborted and its record is consistent") {
    Fixture f(R"({"max_concurrent_runs": 8, "max_queued_runs": 8, "run_timeout_ms": 300})", 10000, {},
              {.latency = 2s});
    HttpClient c(f.service->port());
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.post("/v1/runs", R"({"message": "please count the words of session 8"})");
    CHECK(std::chrono::steady_clock::now() - t0 < 1500ms);  // not held until the LLM answers
    CHECK(r.status == 504);
    auto body = json::parse(r.body);
    CHECK(body.at("status").as_string() == "deadline");
    const std::string id(body.at("id").as_string());
    // The request was aborted: the service closed its connection rather than wait for
    // an answer nobody reads (a connection kept for the pool would stay open).
    CHECK(eventually([&] { return f.llm.stats().connections == 0 && f.llm.stats().in_flight == 0; }));
    CHECK(f.llm.stats().connections_total == 1);
    auto run = f.get_json("/v1/runs/" + id);
    CHECK(run.at("status").as_string() == "deadline");
    CHECK(run.at("persisted").as_string() == "partial");
    auto& rows = run.at("transcript").as_array();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("kind").as_string() == "user");
    CHECK(run.at("lineage_extras").as_object().contains("traceparent"));
    CHECK(c.get("/metrics").body.find("rath_service_runs_finished_total{outcome=\"deadline\"} 1\n") != std::string::npos);
}

TEST_CASE("while SIGTERM drains, /healthz and new runs get 503 and a run that ends within the deadline answers 200; "
          "then connections are refused") {
    // Two model calls of 1 s: the run is still going while the test knocks, and ends
    // well within the 8 s deadline.
    Fixture f(R"({"max_concurrent_runs": 8, "max_queued_runs": 8})", 8000, {}, {.latency = 1s});
    rath::fake_llm::test::HttpResponse finished;
    std::thread client([&] {
        HttpClient c(f.service->port());
        finished = c.post("/v1/runs", R"({"message": "please count the words of session 9"})");
    });
    REQUIRE(eventually([&] { return f.llm.stats().in_flight == 1; }));
    f.service->signal(SIGTERM);
    CHECK(eventually([&] { return HttpClient(f.service->port()).get("/healthz").status == 503; }));
    HttpClient late(f.service->port());
    auto h = late.get("/healthz");
    CHECK(h.body == "draining\n");
    auto refused = late.post("/v1/runs", R"({"message": "too late"})");
    CHECK(refused.status == 503);
    CHECK(refused.headers.count("retry-after") == 1);
    CHECK(late.get("/metrics").body.find("rath_service_runs_rejected_total{reason=\"shutting_down\"} 1\n") !=
          std::string::npos);
    client.join();
    CHECK(finished.status == 200);
    CHECK(json::parse(finished.body).at("answer").as_string() == "done: 7");
    CHECK(f.service->wait_exit(10s) == 0);
    CHECK_THROWS(HttpClient(f.service->port()));
    CHECK(f.llm.stats().requests == 2);
}

TEST_CASE("with a memory store each run recalls from it first, and /metrics counts the memory operations") {
    rath::test::TempDir memory_dir;
    {
        // A note written before the service starts, by this process, in the store's files.
        rath::memory::MemoryStoreSpec spec;
        spec.options = json::object{{"path", memory_dir.path().string()}};
        auto backend = rath::memory::make_local_memory_backend();
        auto store = backend->open(spec);
        rath::memory::OpWrite note{"memory://user/memories/habits/words", "The user often asks to count the words of a session."};
        note.wait = true;
        auto written = store->dispatch(note);
        REQUIRE(std::holds_alternative<rath::memory::WriteResult>(written));
        backend->close(store);
    }
    Fixture f(R"({"max_concurrent_runs": 8, "max_queued_runs": 8})", 10000,
              R"("memory": {"path": ")" + memory_dir.path().string() + R"(", "recall_top_k": 2})");
    HttpClient c(f.service->port());
    auto r = c.post("/v1/runs", R"({"message": "please count the words of session 10"})");
    REQUIRE(r.status == 200);
    auto body = json::parse(r.body);
    CHECK(body.at("answer").as_string() == "done: 7");
    auto run = f.get_json("/v1/runs/" + std::string(body.at("id").as_string()));
    auto& rows = run.at("transcript").as_array();
    REQUIRE(rows.size() == 5);  // the recalled note, then user, tool call, tool result, answer
    CHECK(rows[0].at("kind").as_string() == "user");
    CHECK(std::string(rows[0].at("content").as_string()).find("[untrusted memory:memory://user/memories/habits/words]") == 0);
    auto m = c.get("/metrics");
    CHECK(m.body.find("rath_memory_ops_total{op=\"find\",outcome=\"ok\"} 1\n") != std::string::npos);
    CHECK(m.body.find("rath_memory_op_seconds_total{op=\"find\",outcome=\"ok\"} ") != std::string::npos);
    CHECK(m.body.find("rath_mcp_calls_total") == std::string::npos);
}

}  // TEST_SUITE
