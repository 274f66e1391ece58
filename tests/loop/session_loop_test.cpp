#include "loop/loop_support.hpp"
#include "support/env.hpp"
#include "support/gauge.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/flow/agent.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/registry.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/session/registry.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using rath::test::Call;
using rath::ChunkKind;
using rath::Session;

namespace {

std::string content_of(const rath::ChunkRowPtr& row) {
    auto& p = row->payload();
    auto it = p.find("content");
    if (it == p.end() || !it->value().is_string()) return {};
    return std::string(it->value().as_string());
}

Session agent_session() { return Session::from_agent_prompt("You are a test agent."); }

struct XArgs {
    long long x;
};
BOOST_DESCRIBE_STRUCT(XArgs, (), (x))

struct NameArgs {
    std::string name;
};
BOOST_DESCRIBE_STRUCT(NameArgs, (), (name))

// Waits on a gate before answering: the loop stays pending until the test opens it.
class GateExecutor : public rath::LoopExecutor {
public:
    explicit GateExecutor(rath::async::Lazy<void> gate) : gate_(std::move(gate)) {}

private:
    asio::awaitable<void> do_complete(const rath::llm::ChatRequest&, rath::llm::ChatResponse& r) override {
        co_await gate_.async_get();
        rath::llm::ChatChoice c;
        c.message.content = "opened";
        r = rath::llm::ChatResponse{};
        r.choices.push_back(c);
    }

    rath::async::Lazy<void> gate_;
};

// Answers after a short timer and records how many calls were in flight at once.
class CountingExecutor : public rath::LoopExecutor {
public:
    rath::test::Gauge calls;

private:
    asio::awaitable<void> do_complete(const rath::llm::ChatRequest&, rath::llm::ChatResponse& r) override {
        calls.enter();
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(3));
        co_await t.async_wait(asio::use_awaitable);
        calls.leave();
        rath::llm::ChatChoice c;
        c.message.content = "counted";
        r = rath::llm::ChatResponse{};
        r.choices.push_back(c);
    }
};

}  // namespace

TEST_SUITE("loop/session_loop") {

TEST_CASE("a loop output's legacy provenance stays its inputs' ids whatever happens to its lineage later") {
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("ok", rath::test::usage(1, 1)));
    auto user = Session::from_user_message("hi");
    auto agent = agent_session();
    const rath::SessionLineage expected{user.id(), agent.id(), "run_session_loop"};
    Session out = rath::run_session_loop(user, agent, {.provider = s.provider, .client = s.client});
    out.synchronize();
    CHECK(out.legacy_lineage() == expected);
    out.add_lineage_extra("note", true);
    CHECK(out.legacy_lineage() == expected);
    out.set_lineage(rath::Lineage{{"x"}, "relabelled"});  // the lineage moves on, the legacy record does not
    CHECK(out.lineage_operator() == "relabelled");
    CHECK(out.legacy_lineage() == expected);
    {
        rath::lineage::GraphModeOverride off(false);  // no lineage stamp: the legacy record is kept on its own
        Session out2 = rath::run_session_loop(user, agent, {.provider = s.provider, .client = s.client});
        out2.synchronize();
        CHECK(out2.parent_session_ids().empty());
        CHECK(out2.legacy_lineage() == expected);
    }
}

TEST_CASE("a loop without tool calls appends one assistant row and stops") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("hello there", rath::test::usage(10, 5)));
    auto user = Session::from_user_message("hi");
    auto agent = agent_session();
    Session out = rath::run_session_loop(user, agent, {.provider = s.provider, .client = s.client});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]->kind() == ChunkKind::user);
    CHECK(rows[1]->kind() == ChunkKind::assistant);
    CHECK(content_of(rows[1]) == "hello there");
    CHECK(out.usage()->total_tokens == 15);
    CHECK(out.text() == std::optional<std::string>("hello there"));
    // Lineage and legacy lineage
    CHECK(out.parent_session_ids() == std::vector<std::string>{user.id(), agent.id()});
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.lineage_kind() == rath::LineageKind::op_session_loop);
    REQUIRE(out.legacy_lineage());
    CHECK(out.legacy_lineage()->producer_user_session_id == user.id());
    CHECK(rath::session_registry().active_id() == std::optional<std::string>(out.id()));
    // The request: system prompt first, the built-in tools, tool_choice auto.
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 1);
    REQUIRE(reqs[0].messages.size() == 2);
    CHECK(reqs[0].messages[0].role == "system");
    CHECK(reqs[0].messages[1].role == "user");
    REQUIRE(reqs[0].tools);
    CHECK(reqs[0].tools->size() == 6);
    CHECK((*reqs[0].tools)[0].name == "list_workspace_files");  // sorted by name
    CHECK(reqs[0].sampling.tool_choice == json::value("auto"));
}

TEST_CASE("the output is pending and its lineage is readable before the model answers") {
    rath::async::Lazy<void> gate;
    auto user = Session::from_user_message("wait for it");
    auto agent = agent_session();
    Session out = rath::run_session_loop(user, agent, {.executor = std::make_shared<GateExecutor>(gate)});
    CHECK(out.pending());
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.parent_session_ids().size() == 2);
    gate.set_value();
    CHECK(out.chunks().size() == 2);
    CHECK_FALSE(out.pending());
}

TEST_CASE("chaining loops does not block the caller and the chain materializes in order") {
    rath::async::Lazy<void> gate;
    auto agent = agent_session();
    auto exec = std::make_shared<GateExecutor>(gate);
    Session a = rath::run_session_loop(Session::from_user_message("one"), agent, {.executor = exec});
    Session b = rath::run_session_loop(a, agent, {.executor = exec});  // a is still pending: returns at once
    CHECK(a.pending());
    CHECK(b.pending());
    CHECK(b.parent_session_ids()[0] == a.id());
    gate.set_value();
    auto rows = b.chunks();
    REQUIRE(rows.size() == 3);  // user, a's answer, b's answer
    CHECK(content_of(rows[1]) == "opened");
    CHECK(content_of(rows[2]) == "opened");
}

TEST_CASE("an admission gate runs at most its limit of loops and starts the rest in call order") {
    auto exec = std::make_shared<CountingExecutor>();
    auto gate = std::make_shared<rath::async::Admission>(3);
    auto agent = agent_session();
    std::vector<Session> outs;
    for (int i = 0; i < 30; ++i)
        outs.push_back(rath::run_session_loop(Session::from_user_message("n" + std::to_string(i)), agent,
                                              {.executor = exec, .admission = gate}));
    CHECK(gate->waiting() >= 20);  // the rest wait before they start
    for (auto& o : outs) {
        auto rows = o.chunks();
        REQUIRE(rows.size() == 2);
        CHECK(content_of(rows[1]) == "counted");
    }
    CHECK(exec->calls.peak.load() <= 3);
    CHECK(exec->calls.peak.load() >= 1);
    CHECK(gate->waiting() == 0);
}

TEST_CASE("a chain of loops through one gate of one place does not deadlock") {
    rath::async::Lazy<void> open;
    auto exec = std::make_shared<GateExecutor>(open);
    auto gate = std::make_shared<rath::async::Admission>(1);
    auto agent = agent_session();
    Session a = rath::run_session_loop(Session::from_user_message("one"), agent, {.executor = exec, .admission = gate});
    Session b = rath::run_session_loop(a, agent, {.executor = exec, .admission = gate});  // waits for a's place
    Session c = rath::run_session_loop(b, agent, {.executor = exec, .admission = gate});
    CHECK(gate->waiting() == 2);
    open.set_value();
    auto rows = c.chunks();
    REQUIRE(rows.size() == 4);  // user, then one answer per loop
    CHECK(content_of(rows[3]) == "opened");
}

TEST_CASE("an agent with max_concurrent_runs queues its runs beyond the bound") {
    auto exec = std::make_shared<CountingExecutor>();
    rath::flow::Agent agent("You count.", {.loop = {.executor = exec}, .model = "m", .max_concurrent_runs = 2});
    REQUIRE(agent->admission());
    CHECK(agent->admission()->limit() == 2);
    std::vector<Session> outs;
    for (int i = 0; i < 12; ++i) outs.push_back(agent(Session::from_user_message("x")));
    for (auto& o : outs) CHECK(o.text() == std::optional<std::string>("counted"));
    CHECK(exec->calls.peak.load() <= 2);
    rath::flow::Agent unbounded("You count.", {.loop = {.executor = exec}, .model = "m"});
    CHECK_FALSE(unbounded->admission());
}

TEST_CASE("a plain loop over ten thousand inputs fans out by itself") {
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("ok"));
    auto agent = agent_session();
    std::vector<Session> outs;
    for (int i = 0; i < 10'000; ++i)
        outs.push_back(rath::run_session_loop(Session::from_user_message("n" + std::to_string(i)), agent,
                                              {.provider = s.provider, .client = s.client}));
    std::size_t rows = 0;
    for (auto& o : outs) rows += o.chunks().size();
    CHECK(rows == 20'000);
}

TEST_CASE("a built-in tool call writes into the sandbox and the loop then stops") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"call_1", "write_workspace_file", R"({"path":"notes.txt","content":"abc"})"}}));
    s.client->push(rath::test::text("written"));
    auto dir = std::filesystem::temp_directory_path() / ("rath-loop-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto user = Session::from_user_message("write a note");
    user.to("local", dir.string());
    Session out = rath::run_session_loop(user, agent_session(), {.provider = s.provider, .client = s.client});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 4);
    CHECK(rows[1]->kind() == ChunkKind::assistant);
    CHECK(rows[2]->kind() == ChunkKind::tool_result);
    auto body = json::parse(content_of(rows[2]));
    CHECK(body.at("bytes_written").to_number<int>() == 3);
    CHECK(std::string(rows[2]->payload().at("tool_call_id").as_string()) == "call_1");
    CHECK(std::filesystem::exists(dir / "notes.txt"));
    // The assistant row keeps the call in OpenAI wire form.
    auto& calls = rows[1]->payload().at("tool_calls").as_array();
    CHECK(calls[0].at("function").at("name").as_string() == "write_workspace_file");
    std::filesystem::remove_all(dir);
}

TEST_CASE("unparseable arguments become invalid_tool_arguments before the unknown tool check") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"c1", "nope_tool", "{not json"}, {"c2", "nope_tool", "{}"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 5);
    CHECK(content_of(rows[2]) ==
          R"({"ok": false, "error_kind": "invalid_tool_arguments", "message": "tool 'nope_tool' returned non-JSON or unparseable arguments", "detail": "{not json"})");
    CHECK(content_of(rows[3]) == R"({"ok": false, "error_kind": "unknown_tool", "message": "unknown tool 'nope_tool'"})");
}

TEST_CASE("max_tool_rounds bounds the LLM calls and flags the truncation") {
    auto s = rath::test::scripted();
    s.client->rule(rath::test::tool_calls({{"c", "nope_tool", "{}"}}));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client, .max_tool_rounds = 3});
    auto rows = out.chunks();
    CHECK(rows.size() == 7);  // user + 3 x (assistant, tool_result)
    CHECK(rows.back()->kind() == ChunkKind::tool_result);
    CHECK(s.client->requests().size() == 3);
    auto extras = out.lineage_extras();
    REQUIRE(extras.size() == 1);
    CHECK(extras[0].first == "loop.truncated");
    CHECK(extras[0].second == json::value(true));
}

TEST_CASE("zero rounds makes no call and is flagged as truncated") {
    auto s = rath::test::scripted();
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client, .max_tool_rounds = 0});
    CHECK(out.chunks().size() == 1);
    CHECK(s.client->requests().empty());
    CHECK(out.lineage_extras().size() == 1);
}

TEST_CASE("a raising tool becomes tool_execution_exception while its siblings succeed in call order") {
    auto s = rath::test::scripted();
    auto ok = rath::tool::make_tool<NameArgs>("ok_tool", "ok", [](Session, NameArgs a) { return json::value(a.name); },
                                              {.parallel_safe = true});
    auto boom = rath::tool::make_tool<NameArgs>(
        "boom_tool", "boom", [](Session, NameArgs) -> json::value { throw std::runtime_error("boom"); });
    s.client->push(rath::test::tool_calls({{"a", "ok_tool", R"({"name":"A"})"},
                                          {"b", "boom_tool", R"({"name":"B"})"},
                                          {"c", "ok_tool", R"({"name":"C"})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {ok, boom}, .client = s.client});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 6);
    CHECK(content_of(rows[2]) == "\"A\"");
    auto b = json::parse(content_of(rows[3]));
    CHECK(b.at("error_kind").as_string() == "tool_execution_exception");
    CHECK(std::string(b.at("message").as_string()).find("boom") != std::string::npos);
    CHECK(std::string(b.at("message").as_string()).find("RuntimeError") != std::string::npos);
    CHECK(content_of(rows[4]) == "\"C\"");
}

TEST_CASE("a user tool shadowing a built-in fails the loop when read") {
    auto s = rath::test::scripted();
    auto shadow = rath::tool::make_tool<NameArgs>("run_code", "x", [](Session, NameArgs) { return json::value(1); });
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {shadow}, .client = s.client});
    CHECK_THROWS_WITH(out.chunks(), doctest::Contains("shadows a built-in system tool"));
    // Raised once; the session stays readable afterwards.
    CHECK(out.chunks().size() == 1);
}

TEST_CASE("tools of one round see the same table object and the next round a new one") {
    auto s = rath::test::scripted();
    std::mutex mu;
    std::vector<rath::ChunkTable> seen;
    auto peek = rath::tool::make_tool<XArgs>(
        "peek", "peek",
        [&](Session session, XArgs) {
            auto t = session.chunks();  // the tool's own pending session: the in-flight table
            std::lock_guard lk(mu);
            seen.push_back(t);
            return json::value(static_cast<std::int64_t>(t.size()));
        },
        {.parallel_safe = true});
    s.client->push(rath::test::tool_calls({{"a", "peek", R"({"x":1})"}, {"b", "peek", R"({"x":2})"}}));
    s.client->push(rath::test::tool_calls({{"c", "peek", R"({"x":3})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {peek}, .client = s.client});
    CHECK(out.chunks().size() == 7);
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].same_as(seen[1]));
    CHECK_FALSE(seen[0].same_as(seen[2]));
    CHECK(seen[0].size() == 2);  // user + assistant row of that round
    CHECK(seen[2].size() == 5);
}

TEST_CASE("same-key calls never overlap and different keys run together") {
    auto s = rath::test::scripted();
    rath::test::Gauge running;
    auto slow = [&](int delay_ms) {
        return [&, delay_ms](Session, NameArgs) -> asio::awaitable<json::value> {
            running.enter();
            co_await rath::async::async_sleep(std::chrono::milliseconds(delay_ms));
            running.leave();
            co_return json::value("ok");
        };
    };
    // parallel_safe + the default key ("safe", name): one tool = one key.
    auto same = rath::tool::make_tool<NameArgs>("same", "s", slow(20), {.parallel_safe = true});
    s.client->push(rath::test::tool_calls(
        {{"1", "same", R"({"name":"a"})"}, {"2", "same", R"({"name":"b"})"}, {"3", "same", R"({"name":"c"})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {same}, .client = s.client});
    CHECK(out.chunks().size() == 6);
    CHECK(running.peak.load() == 1);

    running.peak = 0;
    std::vector<rath::tool::FlowToolPtr> distinct;
    std::vector<Call> calls;
    for (int i = 0; i < 4; ++i) {
        std::string name = "k" + std::to_string(i);
        distinct.push_back(rath::tool::make_tool<NameArgs>(name, "k", slow(150), {.parallel_safe = true}));
        calls.push_back({"id" + std::to_string(i), name, R"({"name":"z"})"});
    }
    auto s2 = rath::test::scripted();
    s2.client->push(rath::test::tool_calls(calls));
    s2.client->push(rath::test::text("done"));
    Session out2 = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                          {.provider = s2.provider, .tools = distinct, .client = s2.client});
    CHECK(out2.chunks().size() == 7);
    CHECK(running.peak.load() >= 2);  // four keys overlapped
}

TEST_CASE("calls that are not parallel-safe never overlap anything else of their round") {
    auto s = rath::test::scripted();
    rath::test::Gauge running;
    std::mutex mu;
    std::vector<std::string> order;
    auto body = [&](std::string label) {
        return [&, label](Session, NameArgs) -> asio::awaitable<json::value> {
            running.enter();
            {
                std::lock_guard lk(mu);
                order.push_back(label + "+");
            }
            co_await rath::async::async_sleep(std::chrono::milliseconds(30));
            {
                std::lock_guard lk(mu);
                order.push_back(label + "-");
            }
            running.leave();
            co_return json::value(label);
        };
    };
    // Two safe tools of different keys around two unsafe ones (a shell command and a
    // code run, in spirit): the safe pair overlaps, each unsafe call runs alone.
    auto s1 = rath::tool::make_tool<NameArgs>("safe1", "s", body("s1"), {.parallel_safe = true});
    auto s2 = rath::tool::make_tool<NameArgs>("safe2", "s", body("s2"), {.parallel_safe = true});
    auto shell = rath::tool::make_tool<NameArgs>("shell", "u", body("shell"));
    auto code = rath::tool::make_tool<NameArgs>("code", "u", body("code"));
    s.client->push(rath::test::tool_calls({{"1", "safe1", R"({"name":"a"})"},
                                          {"2", "safe2", R"({"name":"b"})"},
                                          {"3", "shell", R"({"name":"c"})"},
                                          {"4", "code", R"({"name":"d"})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {s1, s2, shell, code}, .client = s.client});
    REQUIRE(out.chunks().size() == 7);
    REQUIRE(order.size() == 8);
    // s1 and s2 in either order, both started before either ended; then shell alone, then code alone.
    CHECK(std::vector<std::string>(order.end() - 4, order.end()) ==
          std::vector<std::string>{"shell+", "shell-", "code+", "code-"});
    CHECK(order[0].back() == '+');
    CHECK(order[1].back() == '+');
    CHECK(running.peak.load() == 2);
    CHECK(content_of(out.chunks()[4]) == "\"shell\"");
}

TEST_CASE("the resource key of a call is asked for once") {
    struct KeyCounting final : rath::tool::FlowToolCall {
        KeyCounting() : FlowToolCall("keyed", "k", json::object{{"type", "object"}}) {}
        bool parallel_safe() const override { return true; }
        rath::tool::ResourceKey resource_key(const json::object& args) const override {
            ++asked;
            return {"k", args.contains("p") ? std::string(args.at("p").as_string()) : std::string("-")};
        }
        asio::awaitable<rath::tool::ToolReturn> async_call(Session, json::object) override {
            co_return rath::tool::ToolReturn(json::value("ok"));
        }
        mutable std::atomic<int> asked{0};
    };
    auto s = rath::test::scripted();
    auto tool = std::make_shared<KeyCounting>();
    s.client->push(rath::test::tool_calls({{"1", "keyed", R"({"p":"a"})"}, {"2", "keyed", R"({"p":"b"})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {tool}, .client = s.client});
    CHECK(out.chunks().size() == 5);
    CHECK(tool->asked.load() == 2);
}

TEST_CASE("an async tool reading its own pending session sees the rows so far without waiting") {
    auto s = rath::test::scripted();
    std::atomic<std::size_t> seen_rows{0};
    std::atomic<bool> was_view{false};
    auto peek = rath::tool::make_tool<XArgs>(
        "apeek", "peek",
        [&](Session session, XArgs) -> asio::awaitable<json::value> {
            was_view = session.dispatch_view();
            auto rows = co_await session.async_chunks();  // would wait for this very loop otherwise
            seen_rows = rows.size();
            auto blocking_read = session.chunks();  // the same, through the blocking form
            co_return json::value(static_cast<std::int64_t>(blocking_read.size()));
        });
    s.client->push(rath::test::tool_calls({{"a", "apeek", R"({"x":1})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {peek}, .client = s.client});
    REQUIRE(out.chunks().size() == 4);
    CHECK(was_view.load());
    CHECK(seen_rows.load() == 2);  // user row and the assistant row of the round
    CHECK(content_of(out.chunks()[2]) == "2");
    CHECK_FALSE(out.dispatch_view());
}

TEST_CASE("a synchronous tool body runs on the blocking pool unless it says it never blocks") {
    auto s = rath::test::scripted();
    std::atomic<int> on_io{-1}, quick_on_io{-1};
    auto blocking = rath::tool::make_tool<XArgs>("blocking", "b", [&](Session, XArgs) {
        on_io = rath::async::on_runtime_thread() ? 1 : 0;
        return json::value(1);
    });
    auto quick = rath::tool::make_tool<XArgs>(
        "quick", "q",
        [&](Session, XArgs) {
            quick_on_io = rath::async::on_runtime_thread() ? 1 : 0;
            return json::value(2);
        },
        {.blocking = false});
    s.client->push(rath::test::tool_calls({{"a", "blocking", R"({"x":1})"}, {"b", "quick", R"({"x":2})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {blocking, quick}, .client = s.client});
    REQUIRE(out.chunks().size() == 5);
    CHECK(on_io.load() == 0);
    CHECK(quick_on_io.load() == 1);
}

TEST_CASE("an executor whose tool dispatch throws at once fails that call, not the loop") {
    struct Throwing final : rath::LoopExecutor {
        explicit Throwing(std::shared_ptr<rath::llm::ChatClient> c) : client(std::move(c)) {}
        std::shared_ptr<rath::llm::ChatClient> client;

    private:
        asio::awaitable<void> do_complete(const rath::llm::ChatRequest& req, rath::llm::ChatResponse& out) override {
            return client->async_complete(req, out);
        }
        asio::awaitable<std::string> do_dispatch_tool(Session, rath::tool::FlowToolPtr, json::object) override {
            throw std::runtime_error("no dispatch today");
        }
    };
    auto s = rath::test::scripted();
    auto t = rath::tool::make_tool<NameArgs>("t", "t", [](Session, NameArgs) { return json::value(1); });
    s.client->push(rath::test::tool_calls({{"a", "t", R"({"name":"x"})"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .tools = {t},
                                          .executor = std::make_shared<Throwing>(s.client)});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 4);
    auto body = json::parse(content_of(rows[2]));
    CHECK(body.at("error_kind") == "tool_execution_exception");
    CHECK(body.at("message") == "RuntimeError: no dispatch today");
    CHECK(out.text() == std::optional<std::string>("done"));
}

TEST_CASE("usage accumulates and the budget callback fires once on the first crossing") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"a", "nope", "{}"}}, rath::test::usage(50, 10)));
    s.client->push(rath::test::tool_calls({{"b", "nope", "{}"}}, rath::test::usage(50, 10)));
    s.client->push(rath::test::tool_calls({{"c", "nope", "{}"}}, rath::test::usage(50, 10)));
    s.client->push(rath::test::text("end", rath::test::usage(3, 2)));
    int fired = 0;
    std::int64_t at = 0;
    s.provider.budget_total_tokens = 100;
    s.provider.on_budget_exceeded = [&](std::string_view, const rath::llm::TokenUsage& u) {
        ++fired;
        at = u.total_tokens;
    };
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client});
    CHECK(out.usage()->total_tokens == 185);
    CHECK(fired == 1);
    CHECK(at == 120);
}

TEST_CASE("a throwing budget callback aborts the loop and surfaces at read") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("first", rath::test::usage(100, 50)));
    s.provider.budget_total_tokens = 10;
    s.provider.on_budget_exceeded = [](std::string_view id, const rath::llm::TokenUsage& u) {
        throw rath::BudgetExceededError("session " + std::string(id) + " spent " + std::to_string(u.total_tokens));
    };
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client});
    CHECK_THROWS_AS(out.chunks(), rath::BudgetExceededError);
    CHECK(out.chunks().size() == 1);  // the triggering assistant row is not in the transcript
}

TEST_CASE("on_event sees every streamed delta while the transcript keeps one assistant row") {
    auto s = rath::test::scripted();
    rath::testing::ScriptedReply r;
    for (auto piece : {"Hel", "lo", "!"}) {
        rath::llm::StreamDelta d;
        d.content_delta = piece;
        r.deltas.push_back(d);
    }
    rath::llm::StreamDelta fin;
    fin.finish_reason = rath::llm::FinishReason::stop;
    r.deltas.push_back(fin);
    s.client->push(r);
    std::string seen;
    int n = 0;
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider,
                                          .client = s.client,
                                          .on_event = [&](const rath::llm::StreamDelta& d) {
                                              ++n;
                                              if (d.content_delta) seen += *d.content_delta;
                                          }});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 2);
    CHECK(content_of(rows[1]) == "Hello!");
    CHECK(seen == "Hello!");
    CHECK(n == 4);
}

TEST_CASE("on_event with a custom executor is refused when the session is read") {
    rath::async::Lazy<void> gate;
    gate.set_value();
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.executor = std::make_shared<GateExecutor>(gate),
                                          .on_event = [](const rath::llm::StreamDelta&) {}});
    CHECK_THROWS_WITH(out.chunks(), doctest::Contains("custom executor"));
}

TEST_CASE("a provider error surfaces once at read and the seeded rows stay readable") {
    auto s = rath::test::scripted();
    rath::testing::ScriptedReply r;
    r.error = std::make_exception_ptr(rath::ProviderError(rath::ProviderErrorInfo{}));
    s.client->push(r);
    Session out = rath::run_session_loop(Session::from_user_message("keep me"), agent_session(),
                                         {.provider = s.provider, .client = s.client});
    CHECK_THROWS_AS(out.chunks(), rath::ProviderError);
    auto rows = out.chunks();
    REQUIRE(rows.size() == 1);
    CHECK(content_of(rows[0]) == "keep me");
}

TEST_CASE("persist writes the transcript through the JSONL writer") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("saved"));
    auto dir = std::filesystem::temp_directory_path() / ("rath-persist-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto user = Session::from_user_message("x");
    auto path = dir / "out.jsonl";
    Session out = rath::run_session_loop(user, agent_session(),
                                         {.provider = s.provider, .client = s.client, .persist_path = path});
    CHECK(out.chunks().size() == 2);
    REQUIRE(std::filesystem::exists(path));
    std::ifstream in(path);
    std::string line;
    int lines = 0;
    std::string last;
    while (std::getline(in, line)) {
        ++lines;
        last = line;
    }
    CHECK(lines == 4);  // header, 2 chunks, trailer
    CHECK(last.find("trailer") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("each run of an agent with a persist_path template or directory writes its own file") {
    rath::test::TempHome home;
    rath::test::TempDir dir;
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("saved"));
    for (auto configured : {dir.path() / "run-{session_id}.jsonl", dir.path() / "by-id" / ""}) {
        rath::flow::AgentOptions o;
        o.loop.provider = s.provider;
        o.loop.client = s.client;
        o.loop.persist_path = configured;
        rath::flow::Agent agent("be brief", o);
        // Started together: both runs write at once.
        Session a = agent(Session::from_user_message("one"));
        Session b = agent(Session::from_user_message("two"));
        REQUIRE(a.chunks().size() == 2);
        REQUIRE(b.chunks().size() == 2);
        for (const Session& out : {a, b}) {
            auto file = rath::persistence::persist_path_for(configured, out.id());
            auto p = rath::persistence::load_session(out.id(), file);
            CHECK(p.closed);
            CHECK(p.chunks == out.chunks());
        }
    }
}

TEST_CASE("a run given an identity has that session id and writes those times in its file's header and trailer") {
    rath::test::TempHome home;
    rath::test::TempDir dir;
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("fixed"));
    rath::LoopOptions o{.provider = s.provider, .client = s.client, .persist_path = dir.path()};
    o.identity = {.session_id = "0b9a5d3e-1c2f-4a6b-8d7e-9f0a1b2c3d4e",
                  .created_at = "2026-01-02T03:04:05.000006Z",
                  .closed_at = "2026-01-02T03:04:07.000008Z"};
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(), o);
    REQUIRE(out.chunks().size() == 2);
    CHECK(out.id() == "0b9a5d3e-1c2f-4a6b-8d7e-9f0a1b2c3d4e");
    auto p = rath::persistence::load_session(out.id(), rath::persistence::persist_path_for(dir.path(), out.id()));
    CHECK(p.header.id == out.id());
    CHECK(p.header.created_at == "2026-01-02T03:04:05.000006Z");
    std::ifstream in(rath::persistence::persist_path_for(dir.path(), out.id()));
    std::string line, last;
    while (std::getline(in, line)) last = line;
    CHECK(last.find(R"("closed_at": "2026-01-02T03:04:07.000008Z")") != std::string::npos);
}

TEST_CASE("an identity whose session id is not a lowercase UUID is refused before the run starts") {
    auto s = rath::test::scripted();
    for (const char* bad : {"../escape", "0B9A5D3E-1C2F-4A6B-8D7E-9F0A1B2C3D4E", ""}) {
        rath::LoopOptions o{.provider = s.provider, .client = s.client};
        o.identity.session_id = bad;
        CHECK_THROWS_WITH_AS(rath::run_session_loop(Session::from_user_message("x"), agent_session(), o),
                             doctest::Contains("identity.session_id is not a lowercase 8-4-4-4-12 UUID"),
                             std::invalid_argument);
    }
    CHECK(s.client->requests().empty());
}

TEST_CASE("a fixed persist_path written by one run refuses a concurrent second run with a clear error") {
    rath::test::TempHome home;
    rath::test::TempDir dir;
    rath::async::Lazy<void> gate;
    auto exec = std::make_shared<GateExecutor>(gate);
    auto fixed = dir.path() / "run.jsonl";
    Session first = rath::run_session_loop(Session::from_user_message("one"), agent_session(),
                                           {.executor = exec, .persist_path = fixed});
    // The first run holds the file once its header is on disk (it then waits on the gate).
    auto partial = rath::persistence::partial_path_for(fixed);
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!std::filesystem::exists(partial) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    REQUIRE(std::filesystem::exists(partial));
    Session second = rath::run_session_loop(Session::from_user_message("two"), agent_session(),
                                            {.executor = exec, .persist_path = fixed});
    CHECK_THROWS_WITH_AS(second.chunks(),
                         doctest::Contains(("is already being written by session " + first.id() +
                                            " in this process; put {session_id} in the path or name a directory")
                                               .c_str()),
                         rath::PersistenceError);
    gate.set_value();
    CHECK(first.chunks().size() == 2);
    auto p = rath::persistence::load_session(first.id(), fixed);  // the first run's file, whole
    CHECK(p.closed);
    CHECK(p.chunks == first.chunks());
}

TEST_CASE("the coroutine form returns the finished session") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("async done"));
    auto out = rath::async::block_on(rath::async_run_session_loop(Session::from_user_message("x"), agent_session(),
                                                                   {.provider = s.provider, .client = s.client}));
    CHECK_FALSE(out.pending());
    CHECK(out.text() == std::optional<std::string>("async done"));
}

}

TEST_CASE("a chat client given in the options is used instead of the provider's") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("from the injected client", rath::test::usage(1, 1)));
    s.client->push(rath::test::text("second run", rath::test::usage(1, 1)));
    // A provider that could never be reached: the injected client answers instead.
    rath::llm::Provider unreachable;
    unreachable.base_url = "http://127.0.0.1:1/v1";
    unreachable.api_key = "sk-unused";
    unreachable.model = "m";
    auto agent = agent_session();
    Session out = rath::run_session_loop(Session::from_user_message("hi"), agent,
                                         {.provider = unreachable, .client = s.client});
    CHECK(out.text() == std::optional<std::string>("from the injected client"));
    Session out2 = rath::run_session_loop(Session::from_user_message("again"), agent,
                                          {.provider = unreachable, .client = s.client});
    CHECK(out2.text() == std::optional<std::string>("second run"));
    // Loops over the same tools send one shared tool list, not a copy each.
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 2);
    REQUIRE(reqs[0].tools);
    REQUIRE(reqs[1].tools);
    CHECK(&reqs[0].tools->tools() == &reqs[1].tools->tools());
}

TEST_CASE("without a chat client the loop asks the registry for the provider's kind") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("from the registered kind"));
    rath::llm::register_chat_client("loop-test-kind", [client = s.client](const rath::llm::Provider&,
                                                                         const rath::llm::ChatClientOptions&) {
        return std::static_pointer_cast<rath::llm::ChatClient>(client);
    });
    s.provider.provider_kind = "loop-test-kind";
    Session out = rath::run_session_loop(Session::from_user_message("hi"), agent_session(), {.provider = s.provider});
    CHECK(out.text() == std::optional<std::string>("from the registered kind"));
    CHECK(s.client->requests().size() == 1);
}

TEST_CASE("lineage extras given in the options are on the output at once and in its persisted header") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("traced"));
    rath::test::TempDir dir;
    const auto path = dir.path() / "traced.jsonl";
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    Session out = rath::run_session_loop(Session::from_user_message("x"), agent_session(),
                                         {.provider = s.provider, .client = s.client, .persist_path = path,
                                          .lineage_extras = {{"traceparent", tp}}});
    auto has_tp = [&](const rath::LineageExtras& extras) {
        for (auto& [k, v] : extras)
            if (k == "traceparent" && v.is_string() && v.as_string() == tp) return true;
        return false;
    };
    CHECK(has_tp(out.lineage_extras()));
    CHECK(out.text() == std::optional<std::string>("traced"));
    auto loaded = rath::persistence::load_session_file(path);
    CHECK(has_tp(loaded.header.lineage_extras));
}
