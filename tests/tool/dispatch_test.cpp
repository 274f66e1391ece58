// dispatch_flow_tool (backend_tools.md §6.4–6.7): projection/content invariant, error
// conversion, lanes, policy and typed user tools.
#include "tool/tool_support.hpp"

#include <rath/async/runtime.hpp>
#include <rath/tool/serialize.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <map>
#include <mutex>

using namespace rath::test;
namespace rb = rath::backend;

namespace {

struct AddArgs {
    long long x;
};
BOOST_DESCRIBE_STRUCT(AddArgs, (), (x))

struct Nested {
    std::string name;
    std::optional<double> weight;
    std::vector<long long> ids;
    bool flag;
};
BOOST_DESCRIBE_STRUCT(Nested, (), (name, weight, ids, flag))

// A tool whose resource key or body throws.
struct Faulty : rt::FlowToolCall {
    bool key_throws;
    std::atomic<int>* ran;
    Faulty(bool k, std::atomic<int>* r) : FlowToolCall("faulty", std::nullopt, obj(R"({"type":"object"})")), key_throws(k), ran(r) {}
    rt::ResourceKey resource_key(const json::object& a) const override {
        if (key_throws) throw std::runtime_error("no key");
        return FlowToolCall::resource_key(a);
    }
    boost::asio::awaitable<rt::ToolReturn> async_call(rath::Session, json::object) override {
        ++*ran;
        throw std::runtime_error("boom");
        co_return json::value(nullptr);
    }
};

}  // namespace

TEST_CASE("parsing the content gives the projection back for every result type") {
    std::vector<rt::ToolReturn> raws{
        rb::DispatchResult(rb::CommandResult{.exit_code = 0, .stdout_data = "h\xc3\xa9\n", .stderr_data = "\xff", .elapsed_ms = 1.25}),
        rb::DispatchResult(rb::FileContent{.data = "text", .is_text = true}),
        rb::DispatchResult(rb::FileContent{.data = std::string("\x00\x01", 2), .is_text = false}),
        rb::DispatchResult(rb::FileEntries{.entries = {{"a", "/w/a", false}, {"d", "/w/d", true}}}),
        rb::DispatchResult(rb::FileWriteResult{.bytes_written = 3}),
        rb::DispatchResult(rb::CodeResult{.text = std::nullopt, .stdout_data = "2\n", .stderr_data = "", .error = std::nullopt}),
        rb::DispatchResult(true),
        rb::DispatchResult(rb::ToolExecutionFailure{"timeout", "late", "TimeoutExpired"}),
        json::value(42),
        json::value("ok"),
        json::parse(R"({"expression":"1+1","result":2.0,"unicode":"测试"})"),
    };
    for (auto& raw : raws) {
        auto r = rt::make_dispatch_result(raw);
        CAPTURE(r.content);
        CHECK(json::parse(r.content) == r.projection);
    }
    CHECK(rt::make_dispatch_result(json::value(42)).content == "42");
    CHECK(rt::make_dispatch_result(json::value("ok")).content == "\"ok\"");
    CHECK(rt::make_dispatch_result(raws[0]).content ==
          R"({"exit_code": 0, "stdout": "h\u00e9\n", "stderr": "\u00ff", "elapsed_ms": 1.25})");
    CHECK(rt::make_dispatch_result(raws[7]).content ==
          R"({"ok": false, "error_kind": "timeout", "message": "late", "detail": "TimeoutExpired"})");
    CHECK(rt::make_dispatch_result(raws[7]).failed);
    CHECK_FALSE(rt::make_dispatch_result(raws[6]).failed);
    CHECK(rt::make_dispatch_result(raws[10]).content.find("测试") != std::string::npos);  // inline values stay UTF-8
}

TEST_CASE("long file content entry lists and inline values are cut as specified") {
    auto big = rt::make_dispatch_result(rb::DispatchResult(rb::FileContent{.data = std::string(13000, 'x'), .is_text = true}));
    CHECK(big.projection.at("data").as_string() == std::string(12000, 'x') + "...(truncated)");
    rb::FileEntries many;
    for (int i = 0; i < 600; ++i) many.entries.push_back({std::to_string(i), "p", false});
    CHECK(rt::make_dispatch_result(rb::DispatchResult(many)).projection.at("entries").as_array().size() == 500);
    auto huge = rt::make_dispatch_result(json::value(std::string(50000, 'y')));
    CHECK(huge.projection.at("type").as_string() == "str");
    CHECK(huge.projection.at("repr").as_string() == "'" + std::string(46999, 'y') + "...(truncated)");
    CHECK(json::parse(huge.content) == huge.projection);
    // Command output is never cut, only marked when the backend capped it.
    auto cmd = rt::make_dispatch_result(rb::DispatchResult(
        rb::CommandResult{.exit_code = 0, .stdout_data = std::string(20000, 'z'), .stdout_truncated = true}));
    auto out = std::string(cmd.projection.at("stdout").as_string());
    CHECK(out.rfind(std::string(20000, 'z'), 0) == 0);
    CHECK(out.find("truncated") != std::string::npos);
    auto code = rt::make_dispatch_result(
        rb::DispatchResult(rb::CodeResult{.stdout_data = "ok", .stderr_data = "e", .stderr_truncated = true}));
    CHECK(code.projection.at("stdout").as_string() == "ok");
    CHECK(code.projection.at("stderr").as_string() == "e\n...(output truncated by the sandbox output cap)");
}

TEST_CASE("a throwing resource key or tool body becomes a tool execution exception") {
    rath::Session s;
    std::atomic<int> ran{0};
    auto key = rt::dispatch_flow_tool(s, std::make_shared<Faulty>(true, &ran), {});
    CHECK(key.projection.at("message").as_string() == "RuntimeError: no key");
    CHECK(key.projection.at("detail").as_string() == "RuntimeError");
    CHECK(ran == 0);
    auto body = rt::dispatch_flow_tool(s, std::make_shared<Faulty>(false, &ran), {});
    CHECK(body.content ==
          R"({"ok": false, "error_kind": "tool_execution_exception", "message": "RuntimeError: boom", "detail": "RuntimeError"})");
    CHECK(ran == 1);
}

TEST_CASE("a typed user tool returning 42 serialises to the JSON number 42") {
    auto add_one = rt::make_tool<AddArgs>("add_one", "Add one.", [](rath::Session, AddArgs a) { return a.x + 1; });
    CHECK(json::serialize(add_one->parameters()) ==
          R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false})");
    rath::Session s;
    CHECK(rt::dispatch_flow_tool(s, add_one, obj(R"({"x":41})")).content == "42");
    auto wrong = rt::dispatch_flow_tool(s, add_one, obj(R"({"x":"41"})"));
    CHECK(wrong.projection.at("message").as_string() == "ValueError: argument 'x': expected integer, got str");
    auto extra = rt::dispatch_flow_tool(s, add_one, obj(R"({"x":1,"y":2})"));
    CHECK(extra.projection.at("message").as_string() == "ValueError: unexpected argument 'y'");
    auto missing = rt::dispatch_flow_tool(s, add_one, obj("{}"));
    CHECK(missing.projection.at("message").as_string() == "ValueError: missing required argument 'x'");
}

TEST_CASE("schemas derived from described structs cover optional vector and bool members") {
    auto schema = rt::schema_of<Nested>({{"name", "Who"}});
    CHECK(json::serialize(schema) ==
          R"({"type":"object","properties":{"name":{"type":"string","description":"Who"},"weight":{"type":["number","null"]},"ids":{"type":"array","items":{"type":"integer"}},"flag":{"type":"boolean"}},"required":["name","ids","flag"],"additionalProperties":false})");
    auto t = rt::make_tool<Nested>("nested", "n", [](rath::Session, Nested n) {
        return json::object{{"name", n.name}, {"n", n.ids.size()}, {"w", n.weight ? *n.weight : -1.0}};
    });
    rath::Session s;
    auto r = rt::dispatch_flow_tool(s, t, obj(R"({"name":"a","ids":[1,2,3],"flag":true})"));
    CHECK(r.content == R"({"name": "a", "n": 3, "w": -1.0})");
    auto bad = rt::dispatch_flow_tool(s, t, obj(R"({"name":"a","ids":[1,"2"],"flag":true})"));
    CHECK(bad.projection.at("message").as_string() == "ValueError: argument 'ids[1]': expected integer, got str");
}

TEST_CASE("one unsafe tool instance never runs twice at once for one session") {
    Gauge g;
    auto t = sleeping_tool("unsafe_sleep", g, {.parallel_safe = false}, false);
    rath::Session s;
    auto& rt_ = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (int i = 0; i < 6; ++i)
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(s, t, json::object{{"key", std::to_string(i % 3)}})));
    for (auto& c : calls) CHECK_FALSE(c.get().failed);
    CHECK(g.peak == 1);
}

TEST_CASE("an unsafe tool runs at once for many sessions and one call at a time within each") {
    // Each session's calls record their order; the tool is not parallel-safe.
    constexpr int sessions_n = 8, calls_n = 4;
    Gauge all;
    std::vector<Gauge> per(sessions_n);
    std::mutex mu;
    std::map<std::string, std::vector<long long>> order;
    auto t = rt::make_tool<AddArgs>(
        "unsafe_fanout", "records its calls",
        [&](rath::Session s, AddArgs a) -> boost::asio::awaitable<json::value> {
            auto& g = per[static_cast<std::size_t>(a.x / calls_n)];
            all.enter();
            g.enter();
            // Waits until every session has a call in (or 10 s): only lanes per session
            // let all of them in at once.
            auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (all.peak.load() < sessions_n && std::chrono::steady_clock::now() < until)
                co_await rath::async::async_sleep(std::chrono::milliseconds(1));
            co_await rath::async::async_sleep(std::chrono::milliseconds(5));
            {
                std::lock_guard lk(mu);
                order[s.id()].push_back(a.x % calls_n);
            }
            g.leave();
            all.leave();
            co_return json::value(a.x);
        });
    REQUIRE_FALSE(t->parallel_safe());
    std::vector<rath::Session> sessions(sessions_n);
    auto& rt_ = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (int c = 0; c < calls_n; ++c)
        for (int s = 0; s < sessions_n; ++s)
            calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(sessions[static_cast<std::size_t>(s)], t,
                                                                    json::object{{"x", s * calls_n + c}})));
    for (auto& c : calls) CHECK_FALSE(c.get().failed);
    CHECK(all.peak == sessions_n);  // every session's first call ran at once
    for (auto& g : per) CHECK(g.peak == 1);
    for (auto& s : sessions) CHECK(order[s.id()] == std::vector<long long>{0, 1, 2, 3});  // in call order
}

TEST_CASE("a safe tool serialises per key and overlaps across keys") {
    Gauge same, diff;
    auto t1 = sleeping_tool("safe_same", same, {.parallel_safe = true}, true);
    auto t2 = sleeping_tool("safe_diff", diff, {.parallel_safe = true}, true);
    rath::Session s;
    auto& rt_ = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (int i = 0; i < 4; ++i) calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(s, t1, json::object{{"key", "k"}})));
    for (int i = 0; i < 4; ++i)
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(s, t2, json::object{{"key", "k" + std::to_string(i)}})));
    for (auto& c : calls) CHECK_FALSE(c.get().failed);
    CHECK(same.peak == 1);
    CHECK(diff.peak > 1);
}

TEST_CASE("a safe tool overlaps across sessions on the same key") {
    Gauge g;
    auto t = sleeping_tool("safe_fanout", g, {.parallel_safe = true}, true);
    std::vector<rath::Session> sessions(4);
    auto& rt_ = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (auto& s : sessions) calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(s, t, json::object{{"key", "k"}})));
    for (auto& c : calls) CHECK_FALSE(c.get().failed);
    CHECK(g.peak > 1);  // one key, four sessions: no process-wide lane
}

TEST_CASE("a sandbox-scoped tool overlaps across sandboxes and takes turns on a shared one") {
    Gauge g;
    auto t = sleeping_tool("scoped", g, {.parallel_safe = false, .sandbox_scoped = true}, false);
    auto& b = rath::backend::get_backend("local");
    auto sb1 = b.open(), sb2 = b.open();
    rath::Session a, c, shared_a, shared_b;
    a.bind_sandbox(sb1);
    c.bind_sandbox(sb2);
    auto& rt_ = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (int i = 0; i < 3; ++i) {
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(a, t, json::object{{"key", "x"}})));
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(c, t, json::object{{"key", "x"}})));
    }
    for (auto& x : calls) CHECK_FALSE(x.get().failed);
    CHECK(g.peak == 2);

    Gauge g2;
    auto t2 = sleeping_tool("scoped2", g2, {.parallel_safe = false, .sandbox_scoped = true}, false);
    auto sb3 = b.open();
    shared_a.bind_sandbox(sb3);
    shared_b.bind_sandbox(sb3);
    calls.clear();
    for (int i = 0; i < 3; ++i) {
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(shared_a, t2, json::object{{"key", "x"}})));
        calls.push_back(rt_.submit(rt::async_dispatch_flow_tool(shared_b, t2, json::object{{"key", "x"}})));
    }
    for (auto& x : calls) CHECK_FALSE(x.get().failed);
    CHECK(g2.peak == 1);
    a.close_sandbox();
    c.close_sandbox();
    shared_a.close_sandbox();
    shared_b.close_sandbox();
    CHECK(sb3->closed());
}

TEST_CASE("no policy allows everything and an allowlist denial never runs the tool") {
    std::atomic<int> ran{0};
    auto t = rt::make_tool<AddArgs>("counted", "c", [&ran](rath::Session, AddArgs a) {
        ++ran;
        return a.x;
    });
    rath::Session s;
    CHECK(rt::dispatch_flow_tool(s, t, obj(R"({"x":1})")).content == "1");
    rt::set_tool_policy(s, rt::ToolPolicy{.allow_tools = std::set<std::string>{"other"}});
    auto denied = rt::dispatch_flow_tool(s, t, obj(R"({"x":1})"));
    CHECK(denied.content ==
          R"({"ok": false, "error_kind": "tool_policy_denied", "message": "tool 'counted' is not in this session's allowlist", "detail": "counted"})");
    CHECK(ran == 1);
    rt::set_tool_policy(s, rt::ToolPolicy{.allow_tools = std::set<std::string>{}});
    CHECK(rt::dispatch_flow_tool(s, t, obj(R"({"x":1})")).failed);
    rt::set_tool_policy(s, std::nullopt);
    CHECK_FALSE(rt::dispatch_flow_tool(s, t, obj(R"({"x":1})")).failed);
}

TEST_CASE("policy fs roots deny traversal and command lists apply to strings and lists") {
    rt::ToolPolicyEnforcer fs({.fs_roots = {"/workspace"}});
    CHECK_FALSE(fs.check("read_workspace_file", obj(R"({"path":"/workspace/a.txt"})")));
    CHECK_FALSE(fs.check("read_workspace_file", obj(R"({"path":"/workspace"})")));
    CHECK(*fs.check("read_workspace_file", obj(R"({"path":"/workspace/../etc/passwd"})")) ==
          "path '/workspace/../etc/passwd' is outside the permitted roots");
    CHECK(fs.check("read_workspace_file", obj(R"({"path":"a.txt"})")).has_value());
    CHECK(fs.check("read_workspace_file", obj(R"({"path":"/workspacex/a"})")).has_value());
    CHECK_FALSE(fs.check("read_workspace_file", obj(R"({"path":null})")));

    rt::ToolPolicyEnforcer deny({.command_deny = {"rm"}});
    CHECK(*deny.check("run_shell_command", obj(R"({"cmd":"rm -rf /"})")) == "command 'rm' is denied by policy");
    CHECK(*deny.check("x", obj(R"({"cmd":["rm","-rf"]})")) == "command 'rm' is denied by policy");
    CHECK_FALSE(deny.check("run_shell_command", obj(R"({"cmd":"ls -l"})")));
    CHECK(deny.check("run_shell_command", obj(R"({"cmd":"echo 'unbalanced"})")).has_value());

    rt::ToolPolicyEnforcer allow({.command_allow = {"ls", "echo"}});
    CHECK_FALSE(allow.check("run_shell_command", obj(R"({"cmd":"'ls' -l"})")));
    CHECK(*allow.check("run_shell_command", obj(R"({"cmd":"cat x"})")) == "command 'cat' is not in this session's allowlist");
    CHECK(*allow.check("x", obj(R"({"cmd":["cat"]})")) == "command 'cat' is not in this session's allowlist");

    CHECK_THROWS_WITH_AS(rt::ToolPolicyEnforcer({.command_allow = {"a"}, .command_deny = {"b"}}),
                         "pass command_allow or command_deny, not both", rt::ToolArgumentError);
    CHECK_THROWS_WITH_AS(rt::ToolPolicyEnforcer({.max_calls = -1}), "max_calls must be non-negative when set",
                         rt::ToolArgumentError);
}

TEST_CASE("max calls counts per session and denied calls use no budget") {
    rt::ToolPolicyEnforcer p({.allow_tools = std::set<std::string>{"ok"}, .max_calls = 2});
    CHECK(p.check("nope", obj("{}")).has_value());
    CHECK_FALSE(p.check("ok", obj("{}")));
    CHECK_FALSE(p.check("ok", obj("{}")));
    CHECK(*p.check("ok", obj("{}")) == "session exceeded max_calls=2 tool calls");
    CHECK(p.calls() == 2);
}

TEST_CASE("a tool's lane group is its address and a lane key keeps its parts apart") {
    std::atomic<int> ran{0};
    auto a = std::make_shared<Faulty>(false, &ran);
    auto b = std::make_shared<Faulty>(false, &ran);
    char expected[32];
    std::snprintf(expected, sizeof expected, "tool@%p", static_cast<const void*>(a.get()));
    CHECK(a->lane_group() == expected);
    CHECK(a->lane_group() != b->lane_group());
    rath::Session s;
    CHECK(rt::lane_key(*a, {"global"}, s) == a->lane_group() + "\x1funsafe\x1fsession:" + s.id());
}
