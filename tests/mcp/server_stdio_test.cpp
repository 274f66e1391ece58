// The stdio transport of rath::mcp::Server on real pipes.
#include "mcp/server_support.hpp"
#include "support/log_capture.hpp"

#include <rath/async/runtime.hpp>
#include <rath/mcp/server.hpp>
#include <rath/mcp/server_stdio.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <future>
#include <set>
#include <thread>
#include <unistd.h>

namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;

namespace {

json::object text_result(std::string text) {
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

// A server on a pair of pipes, served from a thread of its own until the input closes.
struct Piped {
    int to_server[2]{-1, -1};
    int from_server[2]{-1, -1};
    std::future<void> done;

    Piped(std::shared_ptr<Server> server, StdioServeOptions options = {}) {
        REQUIRE(::pipe(to_server) == 0);
        REQUIRE(::pipe(from_server) == 0);
        options.in_fd = to_server[0];
        options.out_fd = from_server[1];
        done = std::async(std::launch::async, [server, options] { serve_stdio(server, options); });
    }
    ~Piped() {
        close_input();
        if (done.valid()) done.wait();
        for (int fd : {to_server[0], from_server[0], from_server[1]})
            if (fd >= 0) ::close(fd);
    }
    void write(const std::string& s) {
        std::size_t off = 0;
        while (off < s.size()) {
            ssize_t n = ::write(to_server[1], s.data() + off, s.size() - off);
            REQUIRE(n > 0);
            off += static_cast<std::size_t>(n);
        }
    }
    void close_input() {
        if (to_server[1] >= 0) ::close(to_server[1]);
        to_server[1] = -1;
    }
    // The server's output up to the end (its copy of the write end closes when it returns).
    std::string read_all() {
        REQUIRE(done.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
        done.get();
        ::close(from_server[1]);
        from_server[1] = -1;
        std::string out;
        char buf[4096];
        for (;;) {
            ssize_t n = ::read(from_server[0], buf, sizeof buf);
            if (n <= 0) break;
            out.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }
};

std::vector<json::object> lines_of(const std::string& out) {
    std::vector<json::object> v;
    std::size_t pos = 0;
    while (pos < out.size()) {
        auto nl = out.find('\n', pos);
        REQUIRE(nl != std::string::npos);
        v.push_back(json::parse(out.substr(pos, nl - pos)).as_object());
        pos = nl + 1;
    }
    return v;
}

std::string init_line() {
    return rath::mcp::test::request_text(0, "initialize",
                                         {{"protocolVersion", "2025-06-18"},
                                          {"capabilities", json::object{}},
                                          {"clientInfo", {{"name", "t"}, {"version", "1"}}}}) +
           "\n";
}

}  // namespace

TEST_SUITE("mcp/server_stdio") {

TEST_CASE("one message per line in and out; CRLF, blank lines and a last line without newline are read") {
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    ToolDefinition slow{.name = "slow", .handler = {}};
    slow.handler = [](json::object, CallContext&) -> asio::awaitable<json::object> {
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
        co_await t.async_wait(asio::use_awaitable);
        co_return text_result("slept");
    };
    server->add_tool(std::move(slow));
    Piped p(server);
    p.write(init_line());
    p.write("\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n");
    // A call still running when the input ends is answered before the server returns.
    p.write(rath::mcp::test::request_text(1, "tools/call", {{"name", "slow"}}) + "\n");
    p.write(rath::mcp::test::request_text(2, "ping"));  // no newline: the input ends here
    p.close_input();
    auto lines = lines_of(p.read_all());
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].at("result").at("protocolVersion") == "2025-06-18");
    std::set<std::int64_t> ids;
    for (auto& l : lines) ids.insert(l.at("id").as_int64());
    CHECK(ids == std::set<std::int64_t>{0, 1, 2});
    for (auto& l : lines)
        if (l.at("id") == 1) CHECK(l.at("result").at("content").at(0).at("text") == "slept");
}

TEST_CASE("a line over max_line_bytes ends the session; what was answered before stays") {
    rath::test::LogCapture logs;
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    StdioServeOptions o;
    o.max_line_bytes = 1024;
    Piped p(server, o);
    p.write(init_line());
    p.write(std::string(4096, 'x'));
    auto out = p.read_all();  // returns although the input was never closed
    auto lines = lines_of(out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].at("id") == 0);
    auto msgs = logs.messages("rath.mcp");
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0] == "stdio: a line longer than 1024 bytes ends the session");
}

TEST_CASE("garbage lines are answered with parse errors and the session goes on") {
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    Piped p(server);
    p.write(init_line());
    p.write("this is not json\n");
    p.write(rath::mcp::test::request_text(3, "ping") + "\n");
    p.close_input();
    auto lines = lines_of(p.read_all());
    REQUIRE(lines.size() == 3);
    CHECK(lines[1].at("error").at("code") == jsonrpc::error_code::parse_error);
    CHECK(lines[2].at("id") == 3);
}

}  // TEST_SUITE
