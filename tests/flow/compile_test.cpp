// compile(), the manifest, validate() and the lifecycle scope (memory_flow.md §4.7).
#include "loop/loop_support.hpp"

#include <rath/backend/backend.hpp>
#include <rath/backend/registry.hpp>
#include <rath/flow.hpp>
#include <rath/memory.hpp>
#include <rath/tool/typed_tool.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/env.hpp"
#include "tests/support/temp_dir.hpp"

#include <stdexcept>
#include <string>
#include <vector>

using rath::Session;
namespace flow = rath::flow;
namespace mem = rath::memory;

namespace {

rath::llm::Provider keyed(std::string model, std::string kind = "openai") {
    rath::llm::Provider p;
    p.model = std::move(model);
    p.api_key = "sk-compile-test";
    p.provider_kind = std::move(kind);
    return p;
}

flow::AgentOptions with_provider(rath::llm::Provider p) {
    flow::AgentOptions o;
    o.loop.provider = std::move(p);
    return o;
}

// Two specialists and a selector under one parent, plus a param of the parent's own.
struct Desk : flow::Workflow {
    explicit Desk(rath::llm::Provider billing_p, rath::llm::Provider tech_p) {
        billing = register_module("billing", flow::Agent("You handle billing.", with_provider(std::move(billing_p))));
        tech = register_module("tech", flow::Agent("You handle tech support.", with_provider(std::move(tech_p))));
        router = register_module("router", flow::Selector(keyed("router-model")));
        register_param("planner", std::make_shared<flow::AgentParam>(
                                      flow::AgentParam{Session::from_agent_prompt("plan"), keyed("planner-model")}));
    }
    Session forward(Session s) override { return (*billing)(s); }
    std::string type_name() const override { return "Desk"; }
    std::shared_ptr<flow::AgentImpl> billing, tech;
    std::shared_ptr<flow::SelectorImpl> router;
};

// A custom executor that answers through a scripted client.
class ClientExecutor final : public rath::LoopExecutor {
public:
    explicit ClientExecutor(std::shared_ptr<rath::llm::ChatClient> client) : client_(std::move(client)) {}

private:
    boost::asio::awaitable<void> do_complete(const rath::llm::ChatRequest& request,
                                             rath::llm::ChatResponse& out) override {
        return client_->async_complete(request, out, nullptr);
    }
    std::shared_ptr<rath::llm::ChatClient> client_;
};

// A client that answers through a scripted one but cannot stream.
class NonStreamingClient final : public rath::llm::ChatClient {
public:
    explicit NonStreamingClient(std::shared_ptr<rath::llm::ChatClient> inner)
        : ChatClient(nullptr), inner_(std::move(inner)) {}
    const rath::llm::Provider& provider() const noexcept override { return inner_->provider(); }
    std::string_view kind() const noexcept override { return "non-streaming"; }

private:
    boost::asio::awaitable<void> do_complete(const rath::llm::ChatRequest& request, rath::llm::ChatResponse& out,
                                             const rath::llm::DeltaCallback*) override {
        return inner_->async_complete(request, out, nullptr);
    }
    std::shared_ptr<rath::llm::ChatClient> inner_;
};

std::vector<std::string> paths(const flow::ResourceManifest& m) {
    std::vector<std::string> out;
    for (const auto& a : m.agents) out.push_back(a.path);
    return out;
}

}  // namespace

TEST_SUITE("flow/compile") {

TEST_CASE("the manifest lists every param with dotted paths in pre-order and a selector as a dynamic node") {
    auto desk = std::make_shared<Desk>(keyed("m-billing"), keyed("m-tech"));
    flow::CompiledWorkflow compiled = desk->compile();
    CHECK(paths(compiled.manifest()) ==
          std::vector<std::string>{"planner", "billing.agent", "router.agent", "tech.agent"});
    const auto& billing = compiled.manifest().agents[1];
    CHECK(billing.agent_session_id == desk->billing->agent()->agent_session.id());
    CHECK(billing.is_agent);
    CHECK_FALSE(compiled.manifest().agents[0].is_agent);
    CHECK_FALSE(billing.has_memory);
    REQUIRE(compiled.manifest().dynamic_nodes.size() == 1);
    const auto& dyn = compiled.manifest().dynamic_nodes[0];
    CHECK(dyn.path == "router");
    CHECK(dyn.kind == "selector");
    CHECK(dyn.reason ==
          "Selector routes to a workflow chosen by the model at runtime; successor set is not statically known");
    CHECK(compiled.manifest().provider_models() ==
          std::vector<std::string>{"m-billing", "m-tech", "planner-model", "router-model"});
    CHECK(compiled.manifest().provider_kinds() == std::vector<std::string>{"openai"});
}

TEST_CASE("a root agent's param is named agent and a root selector's dynamic node is named Selector") {
    flow::Agent solo("solo", with_provider(keyed("m")));
    CHECK(paths(flow::compile(solo).manifest()) == std::vector<std::string>{"agent"});
    flow::Selector sel(keyed("m"));
    auto m = flow::compile(sel).manifest();
    REQUIRE(m.dynamic_nodes.size() == 1);
    CHECK(m.dynamic_nodes[0].path == "Selector");
    CHECK(flow::collect_manifest(flow::EmptyWorkflow()).agents.empty());
}

TEST_CASE("provider_kinds counts an unset kind as openai and provider_models drops an empty model") {
    rath::llm::Provider unset_kind;
    unset_kind.model = "";
    unset_kind.api_key = "k";
    auto desk = std::make_shared<Desk>(unset_kind, keyed("m-tech", "anthropic"));
    auto m = desk->compile().manifest();
    CHECK(m.provider_kinds() == std::vector<std::string>{"anthropic", "openai"});
    CHECK(m.provider_models() == std::vector<std::string>{"m-tech", "planner-model", "router-model"});
}

TEST_CASE("the manifest is a snapshot and compiling changes nothing in the workflow") {
    auto desk = std::make_shared<Desk>(keyed("m1"), keyed("m2"));
    const std::string before = desk->repr();
    flow::CompiledWorkflow compiled = flow::compile(desk);
    CHECK(desk->repr() == before);
    CHECK(compiled.workflow() == desk);
    CHECK(compiled.named_children().size() == 3);
    desk->billing->agent()->to(std::nullopt, std::nullopt, std::string("m-later"));
    CHECK(compiled.manifest().agents[1].provider.model == std::optional<std::string>("m1"));
    CHECK(compiled.repr() == "CompiledWorkflow(" + desk->repr() + ", agents=4, dynamic_nodes=1)");
}

TEST_CASE("calling a compiled workflow runs the workflow's forward") {
    auto s = rath::test::scripted();
    s.client->push(rath::test::text("compiled answer"));
    flow::AgentOptions o;
    o.loop.provider = s.provider;
    o.loop.client = s.client;
    flow::Agent agent("be brief", o);
    auto compiled = flow::compile(agent);
    CHECK(compiled.validate().empty());
    Session out = compiled(Session::from_user_message("hi"));
    CHECK(out.text() == std::optional<std::string>("compiled answer"));
}

TEST_CASE("validate reports nothing when every agent has a registered kind and a key") {
    rath::test::CleanEnv env;
    auto desk = std::make_shared<Desk>(keyed("m1"), keyed("m2", "anthropic"));
    CHECK(desk->compile().validate().empty());
    CHECK(desk->compile().validate(true).empty());
}

TEST_CASE("validate names an agent whose kind is not registered and one whose credential does not resolve") {
    rath::test::CleanEnv env;
    rath::llm::Provider no_key;
    no_key.model = "m-nokey";
    auto desk = std::make_shared<Desk>(keyed("m1", "no-such-kind"), no_key);
    auto problems = desk->compile().validate();
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].starts_with("agent 'billing.agent': unknown provider_kind='no-such-kind' (registered: ["));
    CHECK(problems[0].find("'openai'") != std::string::npos);
    CHECK(problems[1] ==
          "agent 'tech.agent': no api credential resolves for provider_kind='openai' (set Provider.api_key, the vendor "
          "env var, or a config provider)");
}

TEST_CASE("a key kept only in the config file or the environment counts as resolving") {
    rath::test::CleanEnv env;
    rath::llm::Provider no_key;
    no_key.model = "m";
    flow::Agent agent("a", with_provider(no_key));
    CHECK(flow::compile(agent).validate().size() == 1);
    {
        rath::test::EnvGuard key{{"OPENAI_API_KEY", "sk-from-env"}};
        CHECK(flow::compile(agent).validate().empty());
    }
    rath::llm::Provider anthropic;
    anthropic.model = "claude";
    anthropic.provider_kind = "anthropic";
    flow::Agent claude("a", with_provider(anthropic));
    CHECK(flow::compile(claude).validate().size() == 1);
    rath::test::EnvGuard key{{"ANTHROPIC_API_KEY", "sk-ant-from-env"}};
    CHECK(flow::compile(claude).validate().empty());
    rath::llm::Provider litellm;
    litellm.provider_kind = "litellm";
    flow::Agent proxied("a", with_provider(litellm));
    CHECK(flow::compile(proxied).validate().empty());  // a LiteLLM proxy needs no key
}

TEST_CASE("validate with raise_on_error throws every problem in one ValidationError") {
    rath::test::CleanEnv env;
    rath::llm::Provider no_key;
    no_key.model = "m";
    auto desk = std::make_shared<Desk>(no_key, keyed("m", "no-such-kind"));
    try {
        (void)desk->compile().validate(true);
        FAIL("validate(true) did not throw");
    } catch (const flow::ValidationError& e) {
        REQUIRE(e.problems().size() == 2);
        CHECK(std::string(e.what()) == "workflow pre-flight validation failed:\n  - " + e.problems()[0] + "\n  - " +
                                           e.problems()[1]);
        CHECK(e.problems()[0].starts_with("agent 'billing.agent': no api credential resolves"));
    }
    CHECK_THROWS_AS((void)desk->compile().validate(true), std::invalid_argument);
}

TEST_CASE("validate catches a user tool that shadows a built-in and on_event with a custom executor") {
    rath::test::CleanEnv env;
    flow::AgentOptions o = with_provider(keyed("m"));
    o.loop.tools = rath::tool::ToolSet{rath::tool::make_tool<rath::test::Empty>(
        "read_workspace_file", "a clash", [](Session, rath::test::Empty) { return boost::json::value(1); })};
    flow::Agent clash("a", o);
    auto problems = flow::compile(clash).validate();
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == "agent 'agent': user tool 'read_workspace_file' shadows a built-in system tool");

    auto s = rath::test::scripted();
    flow::AgentOptions streaming = with_provider(keyed("m"));
    s.client->rule(rath::test::text("never read"));
    streaming.loop.executor = std::make_shared<ClientExecutor>(s.client);
    streaming.loop.on_event = [](const rath::llm::StreamDelta&) {};
    flow::Agent custom("a", streaming);
    CHECK(flow::compile(custom).validate() ==
          std::vector<std::string>{"agent 'agent': on_event with a custom executor is not supported"});
    // What the check foresees is what the run meets.
    Session out = custom(Session::from_user_message("hi"));
    CHECK_THROWS_WITH_AS(out.synchronize(), doctest::Contains("on_event with a custom executor is not supported"),
                         std::invalid_argument);
    flow::Agent clash_run("a", o);
    Session out2 = clash_run(Session::from_user_message("hi"));
    CHECK_THROWS_WITH(out2.synchronize(), "user tool 'read_workspace_file' shadows a built-in system tool");
}

TEST_CASE("validate catches on_event with a client that cannot stream, as the run would") {
    auto s = rath::test::scripted();
    s.client->rule(rath::test::text("never streamed"));
    flow::AgentOptions o = with_provider(s.provider);
    o.loop.client = std::make_shared<NonStreamingClient>(s.client);
    o.loop.on_event = [](const rath::llm::StreamDelta&) {};
    flow::Agent agent("a", o);
    CHECK(flow::compile(agent).validate() ==
          std::vector<std::string>{"agent 'agent': on_event needs a streaming client; provider_kind='non-streaming' "
                                   "does not stream"});
    Session out = agent(Session::from_user_message("hi"));
    CHECK_THROWS_WITH(out.synchronize(), doctest::Contains("provider_kind='non-streaming'"));

    o.loop.client = s.client;  // the scripted client streams
    CHECK(flow::compile(flow::Agent("a", o)).validate().empty());
}

TEST_CASE("validate with an input session checks its sandbox target") {
    rath::test::CleanEnv env;
    flow::Agent agent("a", with_provider(keyed("m")));
    auto compiled = flow::compile(agent);
    Session unplaced = Session::from_user_message("hi");
    CHECK(compiled.validate(unplaced) ==
          std::vector<std::string>{"input session: no sandbox backend: the agents' built-in tools run in one "
                                   "(session.to(\"local\") or bind_sandbox(...))"});
    Session local = Session::from_user_message("hi");
    local.to("local");
    CHECK(compiled.validate(local).empty());
    CHECK(local.sandbox() == nullptr);  // validating opens nothing
    Session nowhere = Session::from_user_message("hi");
    nowhere.to("no-such-backend");
    auto problems = compiled.validate(nowhere);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].starts_with("input session: unknown sandbox backend 'no-such-backend' (registered: ["));
    CHECK(problems[0].find("'local'") != std::string::npos);
    CHECK_THROWS_AS((void)compiled.validate(nowhere, true), flow::ValidationError);
}

TEST_CASE("validate reports a closed memory store") {
    rath::test::TempDir dir;
    auto store = mem::make_local_memory_backend()->open(rath::test::spec_at(dir.path()));
    flow::AgentOptions o = with_provider(keyed("m"));
    o.memory = store;
    flow::Agent agent("a", o);
    auto compiled = flow::compile(agent);
    CHECK(compiled.manifest().agents[0].has_memory);
    CHECK(compiled.validate().empty());
    store->backend().close(store);
    auto problems = compiled.validate();
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].starts_with("agent 'agent': memory store is closed ("));
}

TEST_CASE("the scope holds one reference on each distinct store and releases them at the end, also on an exception") {
    rath::test::TempDir dir;
    auto shared = mem::make_local_memory_backend()->open(rath::test::spec_at(dir.path()));
    auto billing = with_provider(keyed("m"));
    billing.memory = shared;
    auto tech = with_provider(keyed("m"));
    tech.memory = shared;  // the same store twice: one reference
    auto desk = std::make_shared<flow::SequentialImpl>();
    desk->register_module("billing", flow::Agent("b", billing));
    desk->register_module("tech", flow::Agent("t", tech));
    auto compiled = desk->compile();
    CHECK(shared->refcount() == 2);
    {
        flow::CompiledWorkflow::Scope scope(compiled);
        CHECK(scope.stores().size() == 1);
        CHECK(shared->refcount() == 3);
    }
    CHECK(shared->refcount() == 2);
    try {
        flow::CompiledWorkflow::Scope scope(compiled);
        CHECK(shared->refcount() == 3);
        throw std::runtime_error("mid-run failure");
    } catch (const std::runtime_error&) {
    }
    CHECK(shared->refcount() == 2);
    CHECK_FALSE(shared->closed());
    flow::CompiledWorkflow::Scope none(flow::compile(flow::Agent("x", with_provider(keyed("m")))));
    CHECK(none.stores().empty());
}

TEST_CASE("a scope over a closed store throws and keeps no reference on the others") {
    rath::test::TempDir d1, d2;
    auto open_store = mem::make_local_memory_backend()->open(rath::test::spec_at(d1.path()));
    auto closing = mem::make_local_memory_backend()->open(rath::test::spec_at(d2.path()));
    auto a = with_provider(keyed("m"));
    a.memory = open_store;
    auto b = with_provider(keyed("m"));
    b.memory = closing;
    auto desk = std::make_shared<flow::SequentialImpl>();
    desk->register_module("a", flow::Agent("a", a));
    desk->register_module("b", flow::Agent("b", b));
    auto compiled = desk->compile();
    closing->backend().close(closing);
    CHECK_THROWS_AS([&] { flow::CompiledWorkflow::Scope scope(compiled); }(), mem::MemoryStoreClosed);
    CHECK(open_store->refcount() == 1);
}

TEST_CASE("compile of a null workflow throws") {
    CHECK_THROWS_AS(flow::compile(std::shared_ptr<flow::Workflow>{}), std::invalid_argument);
}

}  // TEST_SUITE
