// rath's client over Streamable HTTP against the reference server
// @modelcontextprotocol/server-everything (pinned in tests/integration/npm), started as
// `node dist/index.js streamableHttp` on a free loopback port: every content type,
// structured content, progress, logging over the GET stream, a long call cancelled.
#include <rath/async.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/error.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/net/http_client.hpp>

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace asio = boost::asio;
using namespace rath::mcp;
using namespace std::chrono_literals;

namespace {

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2});
    return rt;
}

template <class T>
T run(asio::awaitable<T> op) {
    return rath::async::block_on(runtime(), std::move(op));
}

std::filesystem::path source_dir() {
    const char* s = std::getenv("RATH_SOURCE_DIR");
    return s ? s : RATH_SOURCE_DIR;
}

std::filesystem::path node_binary() {
    if (const char* n = std::getenv("RATH_NODE22")) return n;
    auto p = source_dir() / ".deps/node22/node_modules/node/bin/node";
    if (std::filesystem::exists(p)) return p;
    return "/usr/bin/node";
}

std::filesystem::path everything_entry() {
    return source_dir() / "tests/integration/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

std::uint16_t free_port() {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

// The server process, stopped (SIGTERM, then reaped) when the test ends.
class Everything {
public:
    Everything() {
        port_ = free_port();
        std::vector<std::string> env_strings{"PORT=" + std::to_string(port_)};
        for (char** e = environ; *e; ++e)
            if (std::string_view(*e).rfind("PORT=", 0) != 0) env_strings.emplace_back(*e);
        std::vector<char*> envp;
        for (auto& s : env_strings) envp.push_back(s.data());
        envp.push_back(nullptr);
        const std::string node = node_binary().string();
        const std::string entry = everything_entry().string();
        std::vector<std::string> args{node, entry, "streamableHttp"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        const int rc = posix_spawn(&pid_, node.c_str(), &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) throw std::runtime_error("cannot start " + node);
        // Ready when the port answers HTTP.
        rath::net::HttpClient http(runtime());
        const auto end = std::chrono::steady_clock::now() + 30s;
        while (std::chrono::steady_clock::now() < end) {
            try {
                rath::net::HttpRequest req;
                req.method = "GET";
                req.url = base() + "/";
                (void)http.request(req);
                return;
            } catch (const std::exception&) {
                std::this_thread::sleep_for(100ms);
            }
        }
        stop();
        throw std::runtime_error("server-everything did not start listening on port " + std::to_string(port_));
    }
    ~Everything() { stop(); }
    // SIGKILL now, as a crash would.
    void kill_now() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
    }
    std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string url() const { return base() + "/mcp"; }

private:
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
    }
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
};

// Node and the package are test dependencies: missing under CI is a failure, on a
// developer machine a skip with the reason.
bool available() {
    if (std::filesystem::exists(everything_entry()) && std::filesystem::exists(node_binary())) return true;
    const std::string why = "server-everything or Node is missing (run scripts/install-deps.sh --test)";
    if (std::getenv("RATH_CI")) FAIL(why);
    MESSAGE("SKIP: " << why);
    return false;
}

struct Connected {
    std::mutex mu;
    std::vector<LogEvent> logs;
    std::unique_ptr<Client> client;
    StreamableHttpTransport* transport = nullptr;

    explicit Connected(const std::string& url, SamplingHandler sampling = {}) {
        StreamableHttpClientOptions o;
        o.url = url;
        auto t = std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(runtime()), o);
        transport = t.get();
        ClientOptions co;
        co.request_timeout = 20s;
        co.sampling = std::move(sampling);
        co.on_event = [this](const ClientEvent& e) {
            if (auto* l = std::get_if<LogEvent>(&e)) {
                std::lock_guard lk(mu);
                logs.push_back(*l);
            }
        };
        client = std::make_unique<Client>(std::move(t), std::move(co));
        (void)run(client->async_connect());
    }
    ~Connected() { run(client->async_close()); }
    std::size_t log_count() {
        std::lock_guard lk(mu);
        return logs.size();
    }
};

const ContentBlock* find_type(const CallToolResult& r, std::string_view type) {
    for (const auto& b : r.content)
        if (b.type == type) return &b;
    return nullptr;
}

}  // namespace

TEST_SUITE("mcp http everything") {

TEST_CASE("server-everything over Streamable HTTP lists its tools and returns every content type") {
    if (!available()) return;
    Everything server;
    Connected c(server.url());
    CHECK_FALSE(c.transport->session_id().empty());
    CHECK(c.client->server()->server_info.name.find("everything") != std::string::npos);
    const auto tools = run(c.client->async_list_tools());
    std::set<std::string> names;
    for (const auto& t : tools) names.insert(t.name);
    for (const char* n : {"echo", "get-tiny-image", "get-resource-reference", "get-resource-links",
                          "get-structured-content", "trigger-long-running-operation", "toggle-simulated-logging"})
        CHECK_MESSAGE(names.count(n) == 1, n);

    boost::json::object echo_args;
    echo_args["message"] = "hi";
    auto echo = run(c.client->async_call_tool("echo", echo_args));
    REQUIRE(find_type(echo, "text"));
    CHECK(find_type(echo, "text")->text == "Echo: hi");

    auto image = run(c.client->async_call_tool("get-tiny-image", {}));
    const auto* img = find_type(image, "image");
    REQUIRE(img);
    CHECK(img->mime_type == "image/png");
    CHECK(img->data.value_or("").size() > 100);

    boost::json::object ref_args;
    ref_args["resourceType"] = "Text";
    ref_args["resourceId"] = 1;
    auto ref = run(c.client->async_call_tool("get-resource-reference", ref_args));
    const auto* res = find_type(ref, "resource");
    REQUIRE(res);
    CHECK(res->uri.value_or("").find("1") != std::string::npos);
    CHECK_FALSE(res->text.value_or("").empty());

    boost::json::object links_args;
    links_args["count"] = 2;
    auto links = run(c.client->async_call_tool("get-resource-links", links_args));
    int n_links = 0;
    for (const auto& b : links.content)
        if (b.type == "resource_link") {
            ++n_links;
            CHECK_FALSE(b.uri.value_or("").empty());
        }
    CHECK(n_links == 2);

    boost::json::object weather;
    weather["location"] = "New York";
    auto structured = run(c.client->async_call_tool("get-structured-content", weather));
    REQUIRE(structured.structured_content);
    CHECK(structured.structured_content->as_object().contains("temperature"));
}

TEST_CASE("progress of a long-running call arrives as events before its result") {
    if (!available()) return;
    Everything server;
    Connected c(server.url());
    std::mutex mu;
    std::vector<ProgressEvent> progress;
    CallOptions opts;
    opts.on_progress = [&](const ProgressEvent& p) {
        std::lock_guard lk(mu);
        progress.push_back(p);
    };
    boost::json::object args;
    args["duration"] = 1;
    args["steps"] = 4;
    auto r = run(c.client->async_call_tool("trigger-long-running-operation", args, opts));
    REQUIRE(find_type(r, "text"));
    CHECK(find_type(r, "text")->text.value_or("").find("completed") != std::string::npos);
    std::lock_guard lk(mu);
    REQUIRE(progress.size() == 4);
    for (std::size_t i = 0; i < progress.size(); ++i) {
        CHECK(progress[i].progress == doctest::Approx(static_cast<double>(i + 1)));
        CHECK(progress[i].total == doctest::Approx(4.0));
    }
}

TEST_CASE("server-initiated log messages reach the client over the GET stream") {
    if (!available()) return;
    Everything server;
    Connected c(server.url());
    (void)run(c.client->async_call_tool("toggle-simulated-logging", {}));
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (c.log_count() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(20ms);
    REQUIRE(c.log_count() >= 1);
    std::lock_guard lk(c.mu);
    CHECK_FALSE(c.logs.front().level.empty());
    (void)run(c.client->async_call_tool("toggle-simulated-logging", {}));  // off again
}

TEST_CASE("a long-running call that times out is cancelled and the session goes on") {
    if (!available()) return;
    Everything server;
    Connected c(server.url());
    boost::json::object args;
    args["duration"] = 20;
    args["steps"] = 20;
    CallOptions opts;
    opts.timeout = 500ms;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_AS((void)run(c.client->async_call_tool("trigger-long-running-operation", args, opts)),
                    McpTimeoutError);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(c.client->pending_requests() == 0);
    boost::json::object echo_args;
    echo_args["message"] = "after";
    auto echo = run(c.client->async_call_tool("echo", echo_args));
    REQUIRE(find_type(echo, "text"));
    CHECK(find_type(echo, "text")->text == "Echo: after");
    run(c.client->async_ping());
}

TEST_CASE("a sampling request the server sends during a call is answered over HTTP and its answer reaches the "
          "result") {
    if (!available()) return;
    Everything server;
    std::atomic<int> asked{0};
    Connected c(server.url(), [&asked](SamplingRequest req) -> asio::awaitable<boost::json::object> {
        ++asked;
        boost::json::object content;
        content["type"] = "text";
        content["text"] = "sampled:" + std::to_string(req.params.at("maxTokens").to_number<int>());
        boost::json::object result;
        result["role"] = "assistant";
        result["content"] = std::move(content);
        result["model"] = "rath-test";
        result["stopReason"] = "endTurn";
        co_return result;
    });
    boost::json::object args;
    args["prompt"] = "hello";
    args["maxTokens"] = 7;
    auto r = run(c.client->async_call_tool("trigger-sampling-request", args));
    REQUIRE(find_type(r, "text"));
    CHECK(find_type(r, "text")->text.value_or("").find("sampled:7") != std::string::npos);
    CHECK(asked.load() == 1);
}

TEST_CASE("a server killed in the middle of a call fails that call with the transport's reason instead of "
          "hanging") {
    if (!available()) return;
    Everything server;
    Connected c(server.url());
    boost::json::object args;
    args["duration"] = 30;
    args["steps"] = 30;
    std::thread killer([&] {
        std::this_thread::sleep_for(500ms);
        server.kill_now();
    });
    const auto t0 = std::chrono::steady_clock::now();
    try {
        (void)run(c.client->async_call_tool("trigger-long-running-operation", args));
        FAIL("the call succeeded");
    } catch (const McpError& e) {
        CHECK(std::string(e.what()).find("Streamable HTTP") != std::string::npos);
    }
    killer.join();
    CHECK(std::chrono::steady_clock::now() - t0 < 15s);
}

}  // TEST_SUITE
