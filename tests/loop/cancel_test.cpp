// Cancellation of an agent run end to end: Session::cancel, the per-run deadline and a
// run queued at its gate, against the real fake LLM server and real tool processes.
#include "support/cancelled.hpp"
#include "support/wait.hpp"
#include "loop/loop_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::Session;

namespace {

using rath::test::cancelled_reason;
using rath::test::eventually;

Session agent_session() { return Session::from_agent_prompt("You are a test agent."); }

// Answers when its gate opens, and counts its calls.
class GateExecutor : public rath::LoopExecutor {
public:
    explicit GateExecutor(rath::async::Lazy<void> gate) : gate_(std::move(gate)) {}
    std::atomic<int> calls{0};

private:
    asio::awaitable<void> do_complete(const rath::llm::ChatRequest&, rath::llm::ChatResponse& r) override {
        ++calls;
        co_await gate_.async_get();
        rath::llm::ChatChoice c;
        c.message.content = "opened";
        r = rath::llm::ChatResponse{};
        r.choices.push_back(c);
    }
    rath::async::Lazy<void> gate_;
};

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_SUITE("loop/cancel") {

TEST_CASE("cancelling a session aborts its in-flight model request and its reader gets rath::Cancelled") {
    // Long enough to cancel in the middle of the request; short enough for the server
    // to answer within the test and then find the connection closed.
    rath::fake_llm::Server server({.latency = 1500ms});
    server.start();
    rath::llm::Provider p;
    p.base_url = server.base_url();
    p.api_key = "sk-fake";
    p.model = "fake-model";
    Session out = rath::run_session_loop(Session::from_user_message("hello"), agent_session(), {.provider = p});
    REQUIRE(eventually([&] { return server.stats().in_flight == 1; }));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(out.cancel());
    CHECK(cancelled_reason(out) == rath::CancelReason::requested);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    // The client closed the request's connection instead of keeping it for an answer
    // nobody reads: once the server has written its late answer it finds the
    // connection gone (a kept-alive one would stay open in the client's pool).
    CHECK(eventually([&] { return server.stats().connections == 0 && server.stats().in_flight == 0; }));
    CHECK(server.stats().connections_total == 1);
    // Read once: the session now reads as what was published (the user row).
    CHECK(!out.pending());
    CHECK(out.chunks().size() == 1);
    CHECK_FALSE(out.cancel());
}

TEST_CASE("cancelling a session kills its running tool process") {
    rath::test::TempDir dir;
    auto s = rath::test::scripted();
    const auto pid_file = dir.path() / "pid";
    const std::string cmd = "echo $$ > " + pid_file.string() + "; exec sleep 60";
    s.client->push(rath::test::tool_calls({{"call_1", "run_shell_command", boost::json::serialize(boost::json::object{{"cmd", cmd}})}}));
    s.client->push(rath::test::text("never reached"));
    auto user = Session::from_user_message("run it");
    user.to("local", dir.path().string());
    Session out = rath::run_session_loop(user, agent_session(), {.provider = s.provider, .client = s.client});
    pid_t pid = 0;
    REQUIRE(eventually([&] {
        std::ifstream in(pid_file);
        return static_cast<bool>(in >> pid) && pid > 0;
    }));
    CHECK_FALSE(process_gone(pid));
    CHECK(out.cancel());
    CHECK(cancelled_reason(out) == rath::CancelReason::requested);
    CHECK(eventually([&] { return process_gone(pid); }));
    // The assistant row that asked for the call was published; no tool result was.
    auto rows = out.chunks();
    REQUIRE(rows.size() == 2);
    CHECK(rows[1]->kind() == rath::ChunkKind::assistant);
    CHECK(s.client->requests().size() == 1);
}

TEST_CASE("a run's deadline cancels it with the reason deadline") {
    rath::async::Lazy<void> never;
    auto exec = std::make_shared<GateExecutor>(never);
    const auto t0 = std::chrono::steady_clock::now();
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.executor = exec, .timeout = std::chrono::milliseconds(100)});
    CHECK(cancelled_reason(out) == rath::CancelReason::deadline);
    CHECK(std::chrono::steady_clock::now() - t0 >= 100ms);
    CHECK(exec->calls.load() == 1);
}

TEST_CASE("a run cancelled while queued at its admission gate never starts") {
    rath::async::Lazy<void> gate;
    auto exec = std::make_shared<GateExecutor>(gate);
    auto admission = std::make_shared<rath::async::Admission>(1);
    rath::LoopOptions opt{.executor = exec, .admission = admission};
    Session first = rath::run_session_loop(Session::from_user_message("first"), agent_session(), opt);
    Session second = rath::run_session_loop(Session::from_user_message("second"), agent_session(), opt);
    REQUIRE(eventually([&] { return exec->calls.load() == 1; }));
    CHECK(admission->waiting() == 1);
    CHECK(second.cancel(rath::CancelReason::shutdown));
    gate.set_value();
    CHECK(first.text() == std::optional<std::string>("opened"));
    CHECK(cancelled_reason(second) == rath::CancelReason::shutdown);
    CHECK(exec->calls.load() == 1);
    CHECK(eventually([&] { return admission->active() == 0 && admission->waiting() == 0; }));
}

TEST_CASE("a cancelled persisted run leaves a loadable partial file holding the rows it published") {
    rath::test::TempDir dir;
    rath::async::Lazy<void> never;
    auto exec = std::make_shared<GateExecutor>(never);
    const auto path = dir.path() / "run.jsonl";
    Session out = rath::run_session_loop(Session::from_user_message("keep me"), agent_session(),
                                         {.executor = exec, .persist_path = path});
    REQUIRE(eventually([&] { return exec->calls.load() == 1; }));
    CHECK(out.cancel());
    CHECK(cancelled_reason(out) == rath::CancelReason::requested);
    auto rows = out.chunks();
    REQUIRE(rows.size() == 1);
    CHECK_FALSE(std::filesystem::exists(path));  // no trailer, no rename
    auto loaded = rath::persistence::load_session_file(rath::persistence::partial_path_for(path));
    CHECK_FALSE(loaded.closed);
    CHECK(loaded.header.id == out.id());
    REQUIRE(loaded.chunks.size() == rows.size());
    CHECK(loaded.chunks[0]->payload() == rows[0]->payload());
}

TEST_CASE("cancelling a finished session does nothing and reads stay intact") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client});
    CHECK(out.text() == std::optional<std::string>("done"));
    CHECK_FALSE(out.cancel());
    CHECK(out.text() == std::optional<std::string>("done"));
}

TEST_CASE("a runtime shutdown with a deadline cancels a parked run with the reason shutdown") {
    rath::async::Runtime rt({.threads = 2, .name = "cancel-rt"});
    rath::async::Lazy<void> never;
    auto exec = std::make_shared<GateExecutor>(never);
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.executor = exec, .runtime = &rt});
    REQUIRE(eventually([&] { return exec->calls.load() == 1; }));
    CHECK(rt.shutdown(std::chrono::milliseconds(50)) == 1);
    CHECK(cancelled_reason(out) == rath::CancelReason::shutdown);
}

}  // TEST_SUITE
