// rath::mcp::Server as a pure state machine: texts in, messages out, no sockets.
#include "loop/loop_support.hpp"
#include "mcp/server_support.hpp"

#include <rath/flow/agent.hpp>
#include <rath/mcp/server.hpp>
#include <rath/tool/tool_event.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

#include <atomic>

namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;
using rath::mcp::test::Collected;
using rath::mcp::test::Collector;
using rath::mcp::test::request_text;

namespace {

struct AddArgs {
    long long x;
    std::optional<std::string> note;
};
BOOST_DESCRIBE_STRUCT(AddArgs, (), (x, note))

// Results built outside the coroutine bodies (GCC 12 and braced lists in coroutines).
json::object text_result(std::string text) {
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}
json::object empty_result() { return json::object{{"content", json::array{}}}; }
json::array one_content(std::string uri, json::value text) {
    return json::array{json::object{{"uri", std::move(uri)}, {"mimeType", "text/plain"}, {"text", std::move(text)}}};
}
json::array user_text(std::string text) {
    return json::array{json::object{{"role", "user"}, {"content", {{"type", "text"}, {"text", std::move(text)}}}}};
}

ToolDefinition text_tool(std::string name, std::string text) {
    ToolDefinition t;
    t.name = std::move(name);
    t.description = "answers " + text;
    t.handler = [text](json::object, CallContext&) -> asio::awaitable<json::object> {
        co_return text_result(text);
    };
    return t;
}

std::int64_t error_code_of(const json::object& response) { return response.at("error").at("code").as_int64(); }

}  // namespace

TEST_SUITE("mcp/server") {

TEST_CASE("initialize answers a supported version with itself and an unknown one with the latest") {
    auto server = std::make_shared<Server>(ServerOptions{.name = "srv", .version = "9.9", .instructions = "be nice"});
    Collector c;
    auto s = server->open_session(c.sink());
    s->receive(request_text(1, "initialize",
                            {{"protocolVersion", "2025-06-18"},
                             {"capabilities", {{"sampling", json::object{}}}},
                             {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    auto r = c.response(1).at("result").as_object();
    CHECK(r.at("protocolVersion") == "2025-06-18");
    CHECK(r.at("serverInfo").at("name") == "srv");
    CHECK(r.at("serverInfo").at("version") == "9.9");
    CHECK(r.at("instructions") == "be nice");
    CHECK(r.at("capabilities").as_object().contains("tools"));
    CHECK(r.at("capabilities").as_object().contains("logging"));
    CHECK(s->protocol_version() == "2025-06-18");
    CHECK(s->client_capabilities().contains("sampling"));

    auto s2 = server->open_session(c.sink());
    s2->receive(request_text(2, "initialize",
                             {{"protocolVersion", "1999-01-01"}, {"capabilities", json::object{}},
                              {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    CHECK(c.response(2).at("result").at("protocolVersion") == "2025-11-25");
}

TEST_CASE("before initialize only ping is served, and a second initialize is refused") {
    auto server = std::make_shared<Server>();
    Collector c;
    auto s = server->open_session(c.sink());
    s->receive(request_text(5, "ping"));
    CHECK(c.response(5).at("result").as_object().empty());
    s->receive(request_text(6, "tools/list"));
    CHECK(error_code_of(c.response(6)) == jsonrpc::error_code::invalid_request);
    rath::mcp::test::initialize(*s, c);
    s->receive(request_text(7, "initialize",
                            {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object{}},
                             {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    CHECK(error_code_of(c.response(7)) == jsonrpc::error_code::invalid_request);
}

TEST_CASE("malformed input is answered with parse and invalid-request errors, unknown methods with method_not_found") {
    auto server = std::make_shared<Server>();
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    s->receive("{not json");
    auto e = c.wait_for([](const Collected& m) {
        return m.message.contains("error") && m.message.at("error").at("code") == jsonrpc::error_code::parse_error;
    });
    CHECK(e.message.at("id").is_null());
    s->receive(request_text(8, "no/such/method"));
    CHECK(error_code_of(c.response(8)) == jsonrpc::error_code::method_not_found);
}

TEST_CASE("tools/list pages by page_size with an opaque cursor and rejects a bad one") {
    auto server = std::make_shared<Server>(ServerOptions{.page_size = 2});
    for (int i = 0; i < 5; ++i) server->add_tool(text_tool("t" + std::to_string(i), "x"));
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    std::vector<std::string> names;
    std::optional<std::string> cursor;
    std::int64_t id = 10;
    do {
        json::object p;
        if (cursor) p["cursor"] = *cursor;
        s->receive(request_text(id, "tools/list", p));
        auto r = c.response(id++).at("result").as_object();
        for (auto& t : r.at("tools").as_array()) names.emplace_back(t.at("name").as_string());
        cursor.reset();
        if (auto* n = r.if_contains("nextCursor")) cursor = std::string(n->as_string());
    } while (cursor);
    CHECK(names == std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"});
    CHECK(id == 13);
    s->receive(request_text(20, "tools/list", {{"cursor", "bogus"}}));
    CHECK(error_code_of(c.response(20)) == jsonrpc::error_code::invalid_params);
}

TEST_CASE("a typed rath tool keeps its derived schema and answers text, structured content and isError") {
    auto add = rath::tool::make_tool<AddArgs>(
        "add_one", "Add one to x.",
        [](rath::Session, AddArgs a) { return json::value(json::object{{"sum", a.x + 1}}); },
        {.parallel_safe = true, .blocking = false});
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    server->add_tool(add);
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);

    s->receive(request_text(1, "tools/list"));
    auto tool = c.response(1).at("result").at("tools").at(0).as_object();
    CHECK(tool.at("name") == "add_one");
    CHECK(tool.at("description") == "Add one to x.");
    CHECK(tool.at("inputSchema") == add->parameters());
    CHECK(tool.at("inputSchema").at("properties").at("x").at("type") == "integer");

    s->receive(request_text(2, "tools/call", {{"name", "add_one"}, {"arguments", {{"x", 41}}}}));
    auto r = c.response(2).at("result").as_object();
    CHECK_FALSE(r.contains("isError"));
    CHECK(json::parse(r.at("content").at(0).at("text").as_string()) == json::parse(R"({"sum":42})"));
    CHECK(r.at("structuredContent").at("sum") == 42);

    s->receive(request_text(3, "tools/call", {{"name", "add_one"}, {"arguments", {{"x", "many"}}}}));
    auto bad = c.response(3).at("result").as_object();
    CHECK(bad.at("isError") == true);
    CHECK(std::string(bad.at("content").at(0).at("text").as_string()).find("expected integer") != std::string::npos);

    s->receive(request_text(4, "tools/call", {{"name", "nope"}}));
    CHECK(error_code_of(c.response(4)) == jsonrpc::error_code::invalid_params);
}

TEST_CASE("a rath tool's progress and log reports reach the client as notifications of its request") {
    auto add = rath::tool::make_tool<AddArgs>(
        "add_slowly", "Add one to x, reporting.",
        [](rath::Session s, AddArgs a) {
            rath::tool::report_progress(s, 1, 2, "half way");
            rath::tool::report_log(s, "warning", "careful", "adder");
            rath::tool::report_progress(s, 2, 2);
            return json::value(json::object{{"sum", a.x + 1}});
        },
        {.parallel_safe = true, .blocking = false});
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    server->add_tool(add);
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    s->receive(request_text(1, "tools/call", {{"name", "add_slowly"}, {"arguments", {{"x", 1}}}, {"_meta", {{"progressToken", 5}}}}));
    CHECK(c.response(1).at("result").at("structuredContent").at("sum") == 2);
    std::vector<json::object> related;
    for (auto& m : c.all())
        if (m.related && *m.related == jsonrpc::Id{std::int64_t{1}}) related.push_back(m.message);
    REQUIRE(related.size() == 4);
    CHECK(related[0].at("method") == "notifications/progress");
    CHECK(related[0].at("params") == json::parse(R"({"progressToken":5,"progress":1E0,"total":2E0,"message":"half way"})"));
    CHECK(related[1].at("method") == "notifications/message");
    CHECK(related[1].at("params") == json::parse(R"({"level":"warning","logger":"adder","data":"careful"})"));
    CHECK(related[2].at("params") == json::parse(R"({"progressToken":5,"progress":2E0,"total":2E0})"));
    CHECK(related[3].contains("result"));
}

TEST_CASE("a throwing tool is an isError result; progress and log notifications precede the response") {
    auto server = std::make_shared<Server>();
    ToolDefinition boom;
    boom.name = "boom";
    boom.handler = [](json::object, CallContext&) -> asio::awaitable<json::object> {
        throw std::runtime_error("it broke");
        co_return json::object{};
    };
    server->add_tool(std::move(boom));
    ToolDefinition steps;
    steps.name = "steps";
    steps.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        for (int i = 0; i <= 2; ++i) {
            ctx.progress(i, 2, "step " + std::to_string(i));
            ctx.log(McpLogLevel::info, json::string("info " + std::to_string(i)), "steps");
            ctx.log(McpLogLevel::debug, json::string("debug"), "steps");
        }
        co_return empty_result();
    };
    server->add_tool(std::move(steps));
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);

    s->receive(request_text(1, "tools/call", {{"name", "boom"}}));
    auto r = c.response(1).at("result").as_object();
    CHECK(r.at("isError") == true);
    CHECK(r.at("content").at(0).at("text") == "it broke");

    s->receive(request_text(2, "tools/call", {{"name", "steps"}, {"_meta", {{"progressToken", "tok"}}}}));
    c.response(2);
    std::vector<std::string> kinds;
    for (auto& m : c.all()) {
        if (!m.related || *m.related != jsonrpc::Id{std::int64_t{2}}) continue;
        if (auto* meth = m.message.if_contains("method")) {
            kinds.emplace_back(meth->as_string());
            if (*meth == "notifications/progress") CHECK(m.message.at("params").at("progressToken") == "tok");
        } else {
            kinds.emplace_back("response");
            CHECK(m.final);
        }
    }
    CHECK(kinds == std::vector<std::string>{"notifications/progress", "notifications/message",
                                            "notifications/progress", "notifications/message",
                                            "notifications/progress", "notifications/message", "response"});

    // Without a progress token no progress goes out; debug passes once the level allows it.
    s->receive(request_text(3, "logging/setLevel", {{"level", "debug"}}));
    c.response(3);
    CHECK(s->log_level() == McpLogLevel::debug);
    s->receive(request_text(4, "tools/call", {{"name", "steps"}}));
    c.response(4);
    int progress = 0, debug = 0;
    for (auto& m : c.all()) {
        if (!m.related || *m.related != jsonrpc::Id{std::int64_t{4}}) continue;
        if (m.message.contains("method") && m.message.at("method") == "notifications/progress") ++progress;
        if (m.message.contains("method") && m.message.at("params").at("data") == "debug") ++debug;
    }
    CHECK(progress == 0);
    CHECK(debug == 3);
    s->receive(request_text(5, "logging/setLevel", {{"level", "loud"}}));
    CHECK(error_code_of(c.response(5)) == jsonrpc::error_code::invalid_params);
}

TEST_CASE("notifications/cancelled cancels the running handler and no response is sent for it") {
    auto server = std::make_shared<Server>();
    std::atomic<bool> saw_cancel{false};
    ToolDefinition slow;
    slow.name = "slow";
    slow.handler = [&saw_cancel](json::object, CallContext&) -> asio::awaitable<json::object> {
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(30));
        try {
            co_await t.async_wait(asio::use_awaitable);
        } catch (const boost::system::system_error&) {
            saw_cancel = true;
            throw;
        }
        co_return empty_result();
    };
    server->add_tool(std::move(slow));
    server->add_tool(text_tool("quick", "done"));
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    s->receive(request_text(1, "tools/call", {{"name", "slow"}}));
    for (int i = 0; i < 200 && s->in_flight() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(s->in_flight() == 1);
    s->receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}})");
    for (int i = 0; i < 400 && !saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(saw_cancel);
    // A later request is answered; the cancelled one never is.
    s->receive(request_text(2, "tools/call", {{"name", "quick"}}));
    c.response(2);
    for (int i = 0; i < 200 && s->in_flight() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // The transport is told the request ended, with nothing to send for it.
    auto end = c.wait_for([](const Collected& m) { return m.final && m.related == jsonrpc::Id{std::int64_t{1}}; });
    CHECK(end.message.empty());
    for (auto& m : c.all()) CHECK_FALSE((m.message.contains("id") && m.message.at("id") == 1));
}

TEST_CASE("requests beyond max_in_flight are refused at once with -32000; ping before initialize is not counted") {
    auto server = std::make_shared<Server>(ServerOptions{.max_in_flight = 2, .sandbox_backend = std::nullopt});
    ToolDefinition ask;
    ask.name = "hold";
    ask.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        json::value params = json::object{};
        auto pending = ctx.async_request("roots/list", std::move(params));
        co_await std::move(pending);  // held until the client answers
        co_return empty_result();
    };
    server->add_tool(std::move(ask));
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c, "2025-11-25", {{"roots", json::object{}}});
    s->receive(request_text(1, "tools/call", {{"name", "hold"}}));
    s->receive(request_text(2, "tools/call", {{"name", "hold"}}));
    for (int i = 0; i < 400 && s->in_flight() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s->receive(request_text(3, "tools/call", {{"name", "hold"}}));
    auto refused = c.response(3);
    CHECK(error_code_of(refused) == -32000);
    CHECK(std::string(refused.at("error").at("message").as_string()).find("max_in_flight") != std::string::npos);
    CHECK(s->in_flight() == 2);
    s->close();
}

TEST_CASE("a handler's request to the client is answered through receive, and needs the client's capability") {
    auto server = std::make_shared<Server>();
    ToolDefinition ask;
    ask.name = "ask";
    ask.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        json::value params = json::parse(R"({"messages":[],"maxTokens":10})");
        auto pending = ctx.async_request("sampling/createMessage", std::move(params));
        json::value r = co_await std::move(pending);
        co_return text_result(std::string(r.at("content").at("text").as_string()));
    };
    server->add_tool(std::move(ask));

    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c, "2025-11-25", {{"sampling", json::object{}}});
    s->receive(request_text(1, "tools/call", {{"name", "ask"}}));
    auto req = c.wait_for([](const Collected& m) {
        return m.message.contains("method") && m.message.at("method") == "sampling/createMessage";
    });
    CHECK(req.related == jsonrpc::Id{std::int64_t{1}});
    auto out_id = req.message.at("id");
    s->receive(json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", out_id}, {"result", {{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "hi there"}}}}}}));
    CHECK(c.response(1).at("result").at("content").at(0).at("text") == "hi there");

    // A client error answer fails the handler (isError); no capability: refused before sending.
    s->receive(request_text(2, "tools/call", {{"name", "ask"}}));
    auto req2 = c.wait_for([&](const Collected& m) {
        return m.message.contains("method") && m.message.at("method") == "sampling/createMessage" && m.message.at("id") != out_id;
    });
    s->receive(json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", req2.message.at("id")}, {"error", {{"code", -1}, {"message", "user rejected"}}}}));
    auto e = c.response(2);
    CHECK(error_code_of(e) == -1);

    Collector c2;
    auto s2 = server->open_session(c2.sink());
    rath::mcp::test::initialize(*s2, c2);
    s2->receive(request_text(3, "tools/call", {{"name", "ask"}}));
    CHECK(error_code_of(c2.response(3)) == jsonrpc::error_code::invalid_request);
}

TEST_CASE("close ends a handler waiting on the client and nothing more is sent") {
    auto server = std::make_shared<Server>();
    std::atomic<bool> closed_seen{false};
    ToolDefinition ask;
    ask.name = "ask";
    ask.handler = [&closed_seen](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        try {
            json::value params = json::object{};
            auto pending = ctx.async_request("roots/list", std::move(params));
            co_await std::move(pending);
        } catch (const SessionClosed&) {
            closed_seen = true;  // the failure of the pending request
        } catch (const boost::system::system_error&) {
            closed_seen = true;  // or the cancellation of the handler, whichever came first
        }
        co_return empty_result();
    };
    server->add_tool(std::move(ask));
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c, "2025-11-25", {{"roots", json::object{}}});
    s->receive(request_text(1, "tools/call", {{"name", "ask"}}));
    c.wait_for([](const Collected& m) { return m.message.contains("method") && m.message.at("method") == "roots/list"; });
    auto before = c.all().size();
    s->close();
    for (int i = 0; i < 400 && !closed_seen; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(closed_seen);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(c.all().size() == before);
    CHECK(s->closed());
}

TEST_CASE("resources, templates and prompts are listed, read and rendered; unknown ones are errors") {
    auto server = std::make_shared<Server>();
    server->add_resource(ResourceDefinition{
        .uri = "test://a", .name = "a", .mime_type = "text/plain",
        .read = [](std::string uri) -> asio::awaitable<json::array> {
            co_return one_content(uri, "A");
        }});
    server->add_resource_template(ResourceTemplateDefinition{
        .uri_template = "test://item/{id}/data", .name = "item",
        .read = [](std::string uri, json::object vars) -> asio::awaitable<json::array> {
            co_return one_content(uri, vars.at("id"));
        }});
    server->add_prompt(PromptDefinition{
        .name = "greet", .arguments = {PromptArgument{.name = "who", .required = true}},
        .get = [](json::object args) -> asio::awaitable<json::array> {
            co_return user_text("hello " + std::string(args.at("who").as_string()));
        }});
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    s->receive(request_text(1, "resources/list"));
    CHECK(c.response(1).at("result").at("resources").at(0).at("uri") == "test://a");
    s->receive(request_text(2, "resources/read", {{"uri", "test://a"}}));
    CHECK(c.response(2).at("result").at("contents").at(0).at("text") == "A");
    s->receive(request_text(3, "resources/templates/list"));
    CHECK(c.response(3).at("result").at("resourceTemplates").at(0).at("uriTemplate") == "test://item/{id}/data");
    s->receive(request_text(4, "resources/read", {{"uri", "test://item/42/data"}}));
    CHECK(c.response(4).at("result").at("contents").at(0).at("text") == "42");
    s->receive(request_text(5, "resources/read", {{"uri", "test://item/4/2/data"}}));
    auto nf = c.response(5);
    CHECK(error_code_of(nf) == jsonrpc::error_code::resource_not_found);
    CHECK(nf.at("error").at("data").at("uri") == "test://item/4/2/data");
    s->receive(request_text(6, "resources/subscribe", {{"uri", "test://a"}}));
    c.response(6);
    CHECK(s->subscribed("test://a"));
    s->receive(request_text(7, "resources/unsubscribe", {{"uri", "test://a"}}));
    c.response(7);
    CHECK_FALSE(s->subscribed("test://a"));
    s->receive(request_text(8, "prompts/list"));
    auto pl = c.response(8).at("result").at("prompts").at(0);
    CHECK(pl.at("arguments").at(0).at("required") == true);
    s->receive(request_text(9, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "you"}}}}));
    CHECK(c.response(9).at("result").at("messages").at(0).at("content").at("text") == "hello you");
    s->receive(request_text(10, "prompts/get", {{"name", "greet"}}));
    CHECK(error_code_of(c.response(10)) == jsonrpc::error_code::invalid_params);
    s->receive(request_text(11, "prompts/get", {{"name", "nope"}}));
    CHECK(error_code_of(c.response(11)) == jsonrpc::error_code::invalid_params);
    s->receive(request_text(12, "completion/complete",
                            {{"ref", {{"type", "ref/prompt"}, {"name", "greet"}}}, {"argument", {{"name", "who"}, {"value", "y"}}}}));
    CHECK(c.response(12).at("result").at("completion").at("values").as_array().empty());
}

TEST_CASE("an agent tool answers the final text and its transcript, which stays readable as a resource") {
    auto sc = rath::test::scripted();
    sc.client->push(rath::test::text("the answer is 4"));
    rath::flow::AgentOptions ao;
    ao.loop.provider = sc.provider;
    ao.loop.client = sc.client;
    rath::flow::Agent agent("You add numbers.", ao);
    auto server = std::make_shared<Server>();
    server->add_workflow("adder", "Adds numbers.", agent.ptr());
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);

    s->receive(request_text(1, "tools/list"));
    auto t = c.response(1).at("result").at("tools").at(0).as_object();
    CHECK(t.at("name") == "adder");
    CHECK(t.at("inputSchema").at("required").at(0) == "message");

    s->receive(request_text(2, "tools/call", {{"name", "adder"}, {"arguments", {{"message", "2+2?"}}}, {"_meta", {{"progressToken", 7}}}}));
    auto r = c.response(2).at("result").as_object();
    REQUIRE_FALSE(r.contains("isError"));
    CHECK(r.at("content").at(0).at("text") == "the answer is 4");
    auto res = r.at("content").at(1).at("resource").as_object();
    std::string uri(res.at("uri").as_string());
    CHECK(uri.rfind("rath://sessions/", 0) == 0);
    std::string transcript(res.at("text").as_string());
    CHECK(transcript.find("2+2?") != std::string::npos);
    CHECK(transcript.find("the answer is 4") != std::string::npos);
    int progress = 0;
    for (auto& m : c.all())
        if (m.message.contains("method") && m.message.at("method") == "notifications/progress") ++progress;
    CHECK(progress == 2);

    // The new transcript changed the resource list: the session was told, outside any request.
    auto changed = c.wait_for([](const Collected& m) {
        return m.message.contains("method") && m.message.at("method") == "notifications/resources/list_changed";
    });
    CHECK_FALSE(changed.related.has_value());
    s->receive(request_text(3, "resources/list"));
    CHECK(c.response(3).at("result").at("resources").at(0).at("uri").as_string() == uri);
    s->receive(request_text(4, "resources/read", {{"uri", uri}}));
    CHECK(c.response(4).at("result").at("contents").at(0).at("text").as_string() == transcript);

    s->receive(request_text(5, "tools/call", {{"name", "adder"}, {"arguments", {{"msg", "x"}}}}));
    CHECK(c.response(5).at("result").at("isError") == true);
}

}  // TEST_SUITE

TEST_SUITE("mcp/server") {

TEST_CASE("notifications/cancelled for an agent tool cancels the agent's run where it waits") {
    std::atomic<bool> started{false}, cancelled{false};
    auto wait = rath::tool::make_tool<rath::test::Empty>(
        "wait_long", "waits thirty seconds",
        [&started, &cancelled](rath::Session, rath::test::Empty) -> asio::awaitable<json::value> {
            started = true;
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(30));
            try {
                co_await t.async_wait(asio::use_awaitable);
            } catch (const boost::system::system_error&) {
                cancelled = true;
                throw;
            }
            co_return json::value("waited");
        },
        {.parallel_safe = true});
    auto sc = rath::test::scripted();
    sc.client->push(rath::test::tool_calls({{"c1", "wait_long", "{}"}}));
    sc.client->push(rath::test::text("never reached"));
    rath::flow::AgentOptions ao;
    ao.loop.provider = sc.provider;
    ao.loop.client = sc.client;
    ao.loop.tools = rath::tool::ToolSet{wait};
    rath::flow::Agent agent("You wait.", ao);
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    server->add_workflow("waiter", "Waits.", agent.ptr());
    Collector c;
    auto s = server->open_session(c.sink());
    rath::mcp::test::initialize(*s, c);
    s->receive(request_text(1, "tools/call", {{"name", "waiter"}, {"arguments", {{"message", "wait please"}}}}));
    for (int i = 0; i < 1000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(started);
    s->receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    for (int i = 0; i < 1000 && !cancelled; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(cancelled);
    c.wait_for([](const Collected& m) { return m.final && m.related == jsonrpc::Id{std::int64_t{1}}; });
    CHECK(s->in_flight() == 0);
    CHECK(server->transcripts().empty());  // a cancelled run leaves no transcript resource
}

}  // TEST_SUITE
