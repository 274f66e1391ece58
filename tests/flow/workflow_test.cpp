#include "loop/loop_support.hpp"

#include <rath/async/block_on.hpp>
#include <rath/flow.hpp>
#include <rath/llm/registry.hpp>
#include <rath/tool/typed_tool.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>
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
    CHECK(a->agent()->provider.model == std::optional<std::string>("m1"));
    CHECK(a->named_agents().size() == 1);
    CHECK(a->named_agents()[0].first == "agent");
    // An explicit provider with its own model keeps it.
    flow::Agent b("x", {.loop = {.provider = {.model = "own"}}, .model = "ignored"});
    CHECK(b->agent()->provider.model == std::optional<std::string>("own"));
    // A provider without a model is a provider (its model may come from the environment).
    flow::Agent c("x", {.loop = {.provider = {.base_url = "http://localhost:1"}}});
    CHECK_FALSE(c->agent()->provider.model);
}

TEST_CASE("to rebinds the model of a workflow's own agent params") {
    flow::Agent a("x", {.model = "m1"});
    a->to(std::nullopt, std::nullopt, "m2");
    CHECK(a->agent()->provider.model == std::optional<std::string>("m2"));
    CHECK_THROWS_WITH(a->agent()->to(), "nothing to bind: pass a Provider, provider=<name>, or model=");
}

TEST_CASE("an agent forwards through the loop and returns a pending session") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("agent answer"));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client}, .description = "answers"});
    Session out = agent(Session::from_user_message("q"));
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.text() == std::optional<std::string>("agent answer"));
    CHECK(agent->description() == "answers");
    CHECK(agent->type_name() == "Agent");
}

TEST_CASE("register_tool ignores a duplicate name and unregister_tool removes it") {
    flow::Agent a("x", {.model = "m"});
    auto t = rath::tool::make_tool<rath::test::Empty>("t1", "d", [](Session, rath::test::Empty) { return boost::json::value(1); });
    a->register_tool(t);
    a->register_tool(t);
    CHECK(a->tools().size() == 1);
    a->unregister_tool("t1");
    CHECK(a->tools().empty());
}

TEST_CASE("an agent's next forward sees a provider field or tool changed after the previous one") {
    auto s = rath::test::scripted();
    for (int i = 0; i < 4; ++i) s.client->push(rath::test::text("a" + std::to_string(i)));
    flow::Agent agent("x", {.loop = {.provider = s.provider, .client = s.client}});
    CHECK(agent(Session::from_user_message("1")).text() == std::optional<std::string>("a0"));
    agent->agent()->provider.sampling.temperature = 0.25;  // a public field, changed in place
    CHECK(agent(Session::from_user_message("2")).text() == std::optional<std::string>("a1"));
    agent->register_tool(
        rath::tool::make_tool<rath::test::Empty>("extra_tool", "d", [](Session, rath::test::Empty) { return boost::json::value(1); }));
    CHECK(agent(Session::from_user_message("3")).text() == std::optional<std::string>("a2"));
    agent->agent()->provider.sampling.extra_create_args["top_k"] = 3;
    CHECK(agent(Session::from_user_message("4")).text() == std::optional<std::string>("a3"));
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 4);
    CHECK_FALSE(reqs[0].sampling.temperature);
    CHECK(reqs[1].sampling.temperature == std::optional<double>(0.25));
    auto has_tool = [](const rath::llm::ChatRequest& r, std::string_view name) {
        for (const auto& t : *r.tools)
            if (t.name == name) return true;
        return false;
    };
    CHECK_FALSE(has_tool(reqs[1], "extra_tool"));
    CHECK(has_tool(reqs[2], "extra_tool"));
    CHECK(reqs[3].sampling.extra_create_args.contains("top_k"));
    CHECK_FALSE(reqs[2].sampling.extra_create_args.contains("top_k"));
}

TEST_CASE("agents with different prompts interleaved each send their own system message") {
    auto s = rath::test::scripted();
    for (int i = 0; i < 4; ++i) s.client->push(rath::test::text("ok"));
    flow::Agent a("prompt A", {.loop = {.provider = s.provider, .client = s.client}});
    flow::Agent b("prompt B", {.loop = {.provider = s.provider, .client = s.client}});
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
    rath::llm::register_chat_client("counting-scripted", [client = s.client](const rath::llm::Provider&,
                                                                            const rath::llm::ChatClientOptions&) {
        ++built;
        return std::static_pointer_cast<rath::llm::ChatClient>(client);
    });
    rath::llm::Provider p = s.provider;
    p.provider_kind = "counting-scripted";
    flow::Agent agent("x", {.loop = {.provider = p}});
    for (int i = 0; i < 3; ++i) CHECK(agent(Session::from_user_message("q")).text() == std::optional<std::string>("ok"));
    CHECK(built == 1);
    agent->agent()->provider.sampling.temperature = 0.5;
    for (int i = 0; i < 2; ++i) CHECK(agent(Session::from_user_message("q")).text() == std::optional<std::string>("ok"));
    CHECK(built == 2);
    // A client that cannot be built is still reported when the output is read.
    flow::Agent broken("x", {.loop = {.provider = {.model = "m", .provider_kind = "no-such-kind"}}});
    Session out = broken(Session::from_user_message("q"));
    CHECK_THROWS_WITH(out.synchronize(), doctest::Contains("unknown provider_kind='no-such-kind'"));
}

TEST_CASE("providers compare by their settings and never when a budget callback is set") {
    rath::llm::Provider a{.model = "m", .sampling = {.temperature = 0.5}};
    rath::llm::Provider b = a;
    CHECK(rath::llm::same_settings(a, b));
    b.sampling.stop = rath::llm::StopSequences(std::vector<std::string>{"x"});
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
        flow::Agent agent{nullptr};
        Session forward(Session in) override {
            Session out = agent(in);
            (void)out.chunks();  // a blocking read: fine off the io threads
            return out;
        }
    };
    auto w = std::make_shared<Wrap>();
    w->agent = w->register_module("agent", flow::Agent("x", {.loop = {.provider = s.provider, .client = s.client}}));
    Session out = rath::async::block_on(w->async_forward(Session::from_user_message("q")));
    CHECK(out.text() == std::optional<std::string>("from async"));
}

}

TEST_SUITE("flow/compressor") {

TEST_CASE("compress rewrites the transcript into one user row with only its own usage") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("  short summary  ", rath::test::usage(30, 4)));
    auto user = Session::from_user_message("a long conversation");
    flow::Compressor c(rath::default_compress_instruction, {.provider = s.provider, .client = s.client});
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
    CHECK(req.sampling.tool_choice == boost::json::value("none"));
}

TEST_CASE("compress refuses tool calls and blank content") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"x", "run_code", "{}"}}));
    flow::Compressor c(rath::default_compress_instruction, {.provider = s.provider, .client = s.client});
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
    flow::Selector selector(s.provider, {.client = s.client});
    auto chosen = selector->select(Session::from_user_message("my wifi"), {a, b});
    CHECK(chosen == b);
    auto req = s.client->requests().at(0);
    CHECK(req.messages.back().content ==
          std::optional<std::string>("Candidate workflows:\n0: billing\n1: tech support\n\nReply with one index, or -1."));
    CHECK(req.sampling.tool_choice == boost::json::value("none"));
    CHECK(req.messages.front().content == std::optional<std::string>(flow::default_select_instruction));
}

TEST_CASE("minus one or an out of range index selects an empty workflow") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("-1"));
    s.client->push(rath::test::text("7"));
    s.client->push(rath::test::text("no digits here"));
    auto a = std::make_shared<Leaf>("only");
    flow::Selector selector(s.provider, {.client = s.client});
    for (int i = 0; i < 3; ++i) {
        auto w = selector->select(Session::from_user_message("x"), {a});
        CHECK(w->is_empty());
        auto in = Session::from_user_message("same");
        CHECK((*w)(in) == in);  // EmptyWorkflow returns its input
    }
}

TEST_CASE("no candidates means no LLM call") {
    auto s = rath::test::scripted();
    flow::Selector selector(s.provider, {.client = s.client});
    auto w = selector->select(Session::from_user_message("x"), std::span<const std::shared_ptr<flow::Workflow>>{});
    CHECK(w->is_empty());
    CHECK(s.client->requests().empty());
}

TEST_CASE("select_session rejects tool calls and a bad finish reason") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"x", "t", "{}"}}));
    s.client->push(rath::test::text("0", std::nullopt, rath::llm::FinishReason::tool_calls));
    auto agent = Session::from_agent_prompt("route");
    auto select = [&] {
        return flow::select_session(Session::from_user_message("u"), agent, {"a"}, s.provider, nullptr, s.client);
    };
    CHECK_THROWS_WITH(select(), "select_session: model returned tool calls but tools are disabled");
    CHECK_THROWS_WITH(select(), "select_session: unexpected finish_reason='tool_calls'");
}

}

namespace {

// A user module held by a holder: RATH_MODULE declares `Pipeline` over `PipelineImpl`.
struct PipelineImpl : flow::Cloneable<PipelineImpl> {
    PipelineImpl(rath::llm::Provider p, std::shared_ptr<rath::llm::ChatClient> c)
        : provider(std::move(p)), client(std::move(c)) {
        reset();
    }
    void reset() override {
        first = register_module("first", flow::Agent("first prompt", {.loop = {.provider = provider, .client = client}}));
        second = register_module("second", flow::Agent("second prompt", {.loop = {.provider = provider, .client = client}}));
    }
    Session forward(Session s) override { return second(first(s)); }
    std::string type_name() const override { return "Pipeline"; }

    rath::llm::Provider provider;
    std::shared_ptr<rath::llm::ChatClient> client;
    flow::Agent first{nullptr};
    flow::Agent second{nullptr};
};
RATH_MODULE(Pipeline);

}  // namespace

TEST_SUITE("flow/module_holder") {

TEST_CASE("a holder shares one module, calls forward, and converts to a workflow pointer") {
    flow::Agent a("x", {.model = "m"});
    flow::Agent same = a;
    CHECK(same.ptr() == a.ptr());
    CHECK(same->agent() == a->agent());
    std::shared_ptr<flow::Workflow> as_workflow = a;
    CHECK(as_workflow.get() == a.get());
    std::vector<std::shared_ptr<flow::Workflow>> list{a, same};
    CHECK(list.size() == 2);
}

TEST_CASE("an empty holder says so and refuses to be used") {
    flow::Agent empty{nullptr};
    CHECK(empty.is_empty());
    CHECK_FALSE(static_cast<bool>(empty));
    CHECK_THROWS_AS((void)empty->agent(), std::logic_error);
    CHECK_THROWS_AS(empty(Session::from_user_message("x")), std::logic_error);
}

TEST_CASE("a user module registers holders and runs its agents in order") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("from first"));
    s.client->push(rath::test::text("from second"));
    Pipeline pipeline(s.provider, s.client);
    CHECK(pipeline->repr().find("(first): Agent(") != std::string::npos);
    Session out = pipeline(Session::from_user_message("go"));
    CHECK(out.text() == std::optional<std::string>("from second"));
    auto reqs = s.client->requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].messages.front().content == std::optional<std::string>("first prompt"));
    CHECK(reqs[1].messages.front().content == std::optional<std::string>("second prompt"));
}

TEST_CASE("clone of a Cloneable module makes new modules and params with the same values") {
    auto s = rath::test::scripted();
    Pipeline pipeline(s.provider, s.client);
    pipeline->first->agent()->provider.sampling.temperature = 0.75;
    auto copy = std::dynamic_pointer_cast<PipelineImpl>(pipeline->clone());
    REQUIRE(copy);
    CHECK(copy->first.get() != pipeline->first.get());
    CHECK(copy->first->agent() != pipeline->first->agent());
    CHECK(copy->first->agent()->provider.sampling.temperature == std::optional<double>(0.75));  // the value came along
    copy->first->agent()->provider.sampling.temperature = 0.1;                                  // and is its own
    CHECK(pipeline->first->agent()->provider.sampling.temperature == std::optional<double>(0.75));
    CHECK(copy->named_children().size() == 2);
}

TEST_CASE("a module that is not Cloneable says how to become one") {
    CHECK_THROWS_WITH((void)Leaf("x").clone(), doctest::Contains("Cloneable"));
}

TEST_CASE("an agent's clone keeps its tools and settings in params of its own") {
    flow::Agent a("prompt", {.model = "m", .description = "d"});
    a->register_tool(
        rath::tool::make_tool<rath::test::Empty>("t1", "d", [](Session, rath::test::Empty) { return boost::json::value(1); }));
    auto copy = std::dynamic_pointer_cast<flow::AgentImpl>(a->clone());
    REQUIRE(copy);
    CHECK(copy->tools().size() == 1);
    CHECK(copy->description() == "d");
    CHECK(copy->agent() != a->agent());
    CHECK(copy->agent()->agent_session == a->agent()->agent_session);  // the prompt session itself is a shared value
    copy->agent()->provider.model = "other";
    CHECK(a->agent()->provider.model == std::optional<std::string>("m"));
}

TEST_CASE("tools registered while runs are in flight never race them: each run keeps the tools it started with") {
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("ok"));
    flow::Agent agent("x", {.loop = {.provider = s.provider, .client = s.client}});
    std::atomic<bool> stop{false};
    std::thread registrar([&] {
        for (int i = 0; !stop; ++i) {
            agent->register_tool(rath::tool::make_tool<rath::test::Empty>(
                "t" + std::to_string(i % 8), "d", [](Session, rath::test::Empty) { return boost::json::value(1); }));
            if (i % 8 == 7)
                for (int k = 0; k < 8; ++k) agent->unregister_tool("t" + std::to_string(k));
        }
    });
    std::vector<Session> outs;
    for (int i = 0; i < 200; ++i) outs.push_back(agent(Session::from_user_message("q")));
    for (auto& out : outs) CHECK(out.text() == std::optional<std::string>("ok"));
    stop = true;
    registrar.join();
}

}

TEST_SUITE("flow/sequential") {

TEST_CASE("a sequential applies its steps in order and names them by position") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("step one"));
    s.client->push(rath::test::text("step two"));
    flow::Agent one("one", {.loop = {.provider = s.provider, .client = s.client}});
    flow::Agent two("two", {.loop = {.provider = s.provider, .client = s.client}});
    flow::Sequential chain(one, two);
    REQUIRE(chain->size() == 2);
    auto children = chain->named_children();
    CHECK(children[0].first == "0");
    CHECK(children[1].first == "1");
    Session out = chain(Session::from_user_message("go"));
    CHECK(out.text() == std::optional<std::string>("step two"));
    CHECK(out.parent_session_ids().size() == 2);
}

TEST_CASE("an empty sequential returns its input and push_back refuses null steps") {
    flow::Sequential chain;
    auto in = Session::from_user_message("same");
    CHECK(chain(in) == in);
    CHECK_THROWS_AS(chain->push_back(nullptr), std::invalid_argument);
}

TEST_CASE("a sequential's coroutine form awaits each step") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("a"));
    s.client->push(rath::test::text("b"));
    flow::Sequential chain(flow::Agent("1", {.loop = {.provider = s.provider, .client = s.client}}),
                           flow::Agent("2", {.loop = {.provider = s.provider, .client = s.client}}));
    Session out = rath::async::block_on(chain->async_forward(Session::from_user_message("go")));
    CHECK(out.text() == std::optional<std::string>("b"));
}

TEST_CASE("a sequential's clone is a sequential of its steps' clones") {
    flow::Sequential chain(flow::Agent("1", {.model = "m"}), flow::Agent("2", {.model = "m"}));
    auto copy = std::dynamic_pointer_cast<flow::SequentialImpl>(chain->clone());
    REQUIRE(copy);
    REQUIRE(copy->size() == 2);
    CHECK((*copy)[0] != (*chain)[0]);
    CHECK((*copy)[1]->type_name() == "Agent");
}

}
