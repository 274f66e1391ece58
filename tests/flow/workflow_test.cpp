#include "loop/loop_support.hpp"

#include <rath/async/block_on.hpp>
#include <rath/flow.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/scripted_client.hpp>
#include <rath/tool/typed_tool.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <sstream>

using rath::Session;
namespace flow = rath::flow;

namespace {

struct Leaf : flow::Workflow {
    explicit Leaf(std::string d = {}) : Workflow(std::move(d)) {}
    Session forward(Session s) override { return s; }
    std::string type_name() const override { return "Leaf"; }
};

struct Team : flow::Workflow {
    Team() {
        zeta = register_module("zeta", std::make_shared<Leaf>());
        alpha = register_module("alpha", std::make_shared<Leaf>());
    }
    Session forward(Session s) override { return (*alpha)((*zeta)(s)); }
    std::string type_name() const override { return "Team"; }
    std::shared_ptr<Leaf> zeta, alpha;
};

}  // namespace

TEST_SUITE("flow/workflow") {

TEST_CASE("children are listed sorted by name and modules are pre-order") {
    auto team = std::make_shared<Team>();
    auto children = team->named_children();
    REQUIRE(children.size() == 2);
    CHECK(children[0].first == "alpha");
    CHECK(children[1].first == "zeta");
    auto mods = team->modules();
    REQUIRE(mods.size() == 3);
    CHECK(mods[0] == team.get());
    CHECK(mods[1] == team->alpha.get());
    int visited = 0;
    team->apply([&](flow::Workflow&) { ++visited; });
    CHECK(visited == 3);
}

TEST_CASE("unregister removes a child and repr follows the module tree") {
    auto team = std::make_shared<Team>();
    CHECK(team->repr() == "Team(\n  (alpha): Leaf()\n  (zeta): Leaf()\n)");
    team->unregister("zeta");
    CHECK(team->repr() == "Team(\n  (alpha): Leaf()\n)");
    std::ostringstream os;
    os << Leaf();
    CHECK(os.str() == "Leaf()");
}

TEST_CASE("an agent needs a provider or a model") {
    CHECK_THROWS_WITH(flow::Agent("x"), "flow.Agent requires either provider=Provider(...) or model=\"...\"");
    flow::Agent a("be brief", {.model = "m1"});
    CHECK(a.agent()->provider.model == std::optional<std::string>("m1"));
    CHECK(a.named_agents().size() == 1);
    CHECK(a.named_agents()[0].first == "agent");
    // An explicit provider with its own model keeps it.
    flow::Agent b("x", {.provider = rath::llm::Provider{.model = "own"}, .model = "ignored"});
    CHECK(b.agent()->provider.model == std::optional<std::string>("own"));
}

TEST_CASE("to rebinds the model of a workflow's own agent params") {
    flow::Agent a("x", {.model = "m1"});
    a.to(std::nullopt, std::nullopt, "m2");
    CHECK(a.agent()->provider.model == std::optional<std::string>("m2"));
    CHECK_THROWS_WITH(a.agent()->to(), "nothing to bind: pass a Provider, provider=<name>, or model=");
}

TEST_CASE("an agent forwards through the loop and returns a pending session") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("agent answer"));
    flow::Agent agent("You answer.", {.provider = s.provider, .description = "answers"});
    Session out = agent(Session::from_user_message("q"));
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.text() == std::optional<std::string>("agent answer"));
    CHECK(agent.description() == "answers");
    CHECK(agent.type_name() == "Agent");
}

TEST_CASE("register_tool ignores a duplicate name and unregister_tool removes it") {
    flow::Agent a("x", {.model = "m"});
    auto t = rath::tool::make_tool<rath::test::Empty>("t1", "d", [](Session, rath::test::Empty) { return boost::json::value(1); });
    a.register_tool(t);
    a.register_tool(t);
    CHECK(a.tools().size() == 1);
    a.unregister_tool("t1");
    CHECK(a.tools().empty());
}

TEST_CASE("an agent's next forward sees a provider field or tool changed after the previous one") {
    auto s = rath::test::scripted();
    for (int i = 0; i < 4; ++i) s.client->push(rath::test::text("a" + std::to_string(i)));
    flow::Agent agent("x", {.provider = s.provider});
    CHECK(agent(Session::from_user_message("1")).text() == std::optional<std::string>("a0"));
    agent.agent()->provider.temperature = 0.25;  // a public field, changed in place
    CHECK(agent(Session::from_user_message("2")).text() == std::optional<std::string>("a1"));
    agent.register_tool(
        rath::tool::make_tool<rath::test::Empty>("extra_tool", "d", [](Session, rath::test::Empty) { return boost::json::value(1); }));
    CHECK(agent(Session::from_user_message("3")).text() == std::optional<std::string>("a2"));
    agent.agent()->provider.extra_create_args["top_k"] = 3;
    CHECK(agent(Session::from_user_message("4")).text() == std::optional<std::string>("a3"));
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 4);
    CHECK_FALSE(reqs[0].temperature);
    CHECK(reqs[1].temperature == std::optional<double>(0.25));
    auto has_tool = [](const rath::llm::ChatRequest& r, std::string_view name) {
        for (const auto& t : *r.tools)
            if (t.name == name) return true;
        return false;
    };
    CHECK_FALSE(has_tool(reqs[1], "extra_tool"));
    CHECK(has_tool(reqs[2], "extra_tool"));
    CHECK(reqs[3].extra_create_args.contains("top_k"));
    CHECK_FALSE(reqs[2].extra_create_args.contains("top_k"));
}

TEST_CASE("agents with different prompts interleaved each send their own system message") {
    auto s = rath::test::scripted();
    for (int i = 0; i < 4; ++i) s.client->push(rath::test::text("ok"));
    flow::Agent a("prompt A", {.provider = s.provider});
    flow::Agent b("prompt B", {.provider = s.provider});
    for (int i = 0; i < 2; ++i) {
        (void)a(Session::from_user_message("qa")).text();
        (void)b(Session::from_user_message("qb")).text();
    }
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 4);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        REQUIRE(reqs[i].messages.size() == 2);
        CHECK(reqs[i].messages[0].content == std::optional<std::string>(i % 2 == 0 ? "prompt A" : "prompt B"));
    }
}

TEST_CASE("an agent without a client builds one per provider setting, not one per run") {
    auto s = rath::test::scripted();
    for (int i = 0; i < 5; ++i) s.client->push(rath::test::text("ok"));
    static std::atomic<int> built{0};
    built = 0;
    rath::llm::register_chat_client("counting-scripted", [](const rath::llm::Provider& p, const rath::llm::ChatClientOptions&) {
        ++built;
        return std::static_pointer_cast<rath::llm::ChatClient>(rath::llm::ScriptedChatClient::named(*p.model));
    });
    rath::llm::Provider p = s.provider;
    p.provider_kind = "counting-scripted";
    flow::Agent agent("x", {.provider = p});
    for (int i = 0; i < 3; ++i) CHECK(agent(Session::from_user_message("q")).text() == std::optional<std::string>("ok"));
    CHECK(built == 1);
    agent.agent()->provider.temperature = 0.5;
    for (int i = 0; i < 2; ++i) CHECK(agent(Session::from_user_message("q")).text() == std::optional<std::string>("ok"));
    CHECK(built == 2);
    // A client that cannot be built is still reported when the output is read.
    flow::Agent broken("x", {.provider = rath::llm::Provider{.model = "m", .provider_kind = "no-such-kind"}});
    Session out = broken(Session::from_user_message("q"));
    CHECK_THROWS_WITH(out.synchronize(), doctest::Contains("unknown provider_kind='no-such-kind'"));
}

TEST_CASE("providers compare by their settings and never when a budget callback is set") {
    rath::llm::Provider a{.model = "m", .temperature = 0.5};
    rath::llm::Provider b = a;
    CHECK(rath::llm::same_settings(a, b));
    b.stop = rath::llm::StopSequences(std::vector<std::string>{"x"});
    CHECK_FALSE(rath::llm::same_settings(a, b));
    b = a;
    b.retry_max_attempts = 2;
    CHECK_FALSE(rath::llm::same_settings(a, b));
    b = a;
    b.on_budget_exceeded = [](std::string_view, const rath::llm::TokenUsage&) {};
    CHECK_FALSE(rath::llm::same_settings(b, b));
}

TEST_CASE("a workflow's coroutine form runs forward off the io threads") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("from async"));
    struct Wrap : flow::Workflow {
        std::shared_ptr<flow::Agent> agent;
        Session forward(Session in) override {
            Session out = (*agent)(in);
            (void)out.chunks();  // a blocking read: fine off the io threads
            return out;
        }
    };
    auto w = std::make_shared<Wrap>();
    w->agent = w->register_module("agent", std::make_shared<flow::Agent>("x", flow::AgentOptions{.provider = s.provider}));
    Session out = rath::async::block_on(w->async_forward(Session::from_user_message("q")));
    CHECK(out.text() == std::optional<std::string>("from async"));
}

}

TEST_SUITE("flow/compressor") {

TEST_CASE("compress rewrites the transcript into one user row with only its own usage") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("  short summary  ", rath::test::usage(30, 4)));
    auto user = Session::from_user_message("a long conversation");
    flow::Compressor c(rath::default_compress_instruction, {.provider = s.provider});
    Session out = c(user);
    auto rows = out.chunks();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]->kind() == rath::ChunkKind::user);
    CHECK(rows[0]->payload().at("content").as_string() == "short summary");
    CHECK(out.usage()->total_tokens == 34);
    CHECK(out.lineage_operator() == "run_session_compress");
    auto extras = out.lineage_extras();
    REQUIRE(extras.size() == 2);
    CHECK(extras[0].first == "compression.lossy");
    CHECK(extras[1].first == "compression.rows_out");
    // The request: agent rows, user rows, then the instruction; no tools; tool_choice none.
    auto req = s.client->requests().at(0);
    CHECK(req.messages.back().content == std::optional<std::string>(rath::default_compress_instruction));
    CHECK_FALSE(req.tools);
    CHECK(req.tool_choice == boost::json::value("none"));
}

TEST_CASE("compress refuses tool calls and blank content") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"x", "run_code", "{}"}}));
    flow::Compressor c(rath::default_compress_instruction, {.provider = s.provider});
    CHECK_THROWS_WITH(c(Session::from_user_message("a")).chunks(),
                      "run_session_compress: model returned tool calls but tools are disabled");
    s.client->push(rath::test::text("   "));
    CHECK_THROWS_WITH(c(Session::from_user_message("a")).chunks(), "run_session_compress: empty model content");
}

}

TEST_SUITE("flow/selector") {

TEST_CASE("the selector routes to the chosen workflow and shows the numbered menu") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("I pick 1."));
    auto a = std::make_shared<Leaf>("billing");
    auto b = std::make_shared<Leaf>("tech support");
    flow::Selector selector(s.provider);
    auto chosen = selector.select(Session::from_user_message("my wifi"), {a, b});
    CHECK(chosen == b);
    auto req = s.client->requests().at(0);
    CHECK(req.messages.back().content ==
          std::optional<std::string>("Candidate workflows:\n0: billing\n1: tech support\n\nReply with one index, or -1."));
    CHECK(req.tool_choice == boost::json::value("none"));
    CHECK(req.messages.front().content == std::optional<std::string>(flow::default_select_instruction));
}

TEST_CASE("minus one or an out of range index selects an empty workflow") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("-1"));
    s.client->push(rath::test::text("7"));
    s.client->push(rath::test::text("no digits here"));
    auto a = std::make_shared<Leaf>("only");
    flow::Selector selector(s.provider);
    for (int i = 0; i < 3; ++i) {
        auto w = selector.select(Session::from_user_message("x"), {a});
        CHECK(w->is_empty());
        auto in = Session::from_user_message("same");
        CHECK((*w)(in) == in);  // EmptyWorkflow returns its input
    }
}

TEST_CASE("no candidates means no LLM call") {
    auto s = rath::test::scripted();
    flow::Selector selector(s.provider);
    auto w = selector.select(Session::from_user_message("x"), std::span<const std::shared_ptr<flow::Workflow>>{});
    CHECK(w->is_empty());
    CHECK(s.client->requests().empty());
}

TEST_CASE("select_session rejects tool calls and a bad finish reason") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"x", "t", "{}"}}));
    s.client->push(rath::test::text("0", std::nullopt, rath::llm::FinishReason::tool_calls));
    auto agent = Session::from_agent_prompt("route");
    CHECK_THROWS_WITH(flow::select_session(Session::from_user_message("u"), agent, {"a"}, s.provider),
                      "select_session: model returned tool calls but tools are disabled");
    CHECK_THROWS_WITH(flow::select_session(Session::from_user_message("u"), agent, {"a"}, s.provider),
                      "select_session: unexpected finish_reason='tool_calls'");
}

}
