// 12 — compile: the pre-flight pass over a workflow tree. compile() lists what the tree
// will use (every agent with its provider and memory, the Selector whose successor is
// chosen at run time); validate() finds, offline, the mismatches a run would otherwise
// meet halfway: a provider kind no client is registered for, a key that resolves
// nowhere, a tool clashing with a built-in, an input session whose sandbox backend does
// not exist. The scope then holds every memory store for the run.
#include "../common/example_llm.hpp"
#include "../common/scratch_dir.hpp"

#include <rath/flow.hpp>
#include <rath/memory.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace flow = rath::flow;
namespace memory = rath::memory;

namespace {

struct NoArgs {};
BOOST_DESCRIBE_STRUCT(NoArgs, (), ())

// A help desk: a router picks one of two specialists; a reviewer param of the desk's
// own is listed as a leaf.
struct HelpDesk : flow::Workflow {
    HelpDesk(const rath::llm::Provider& provider, flow::AgentOptions billing_options,
             flow::AgentOptions tech_options) {
        billing = register_module("billing", flow::Agent("You handle billing and refunds.", std::move(billing_options)));
        tech = register_module("tech", flow::Agent("You handle technical problems.", std::move(tech_options)));
        router = register_module("router", flow::Selector(provider));
        register_param("reviewer", std::make_shared<flow::AgentParam>(flow::AgentParam{
                                       rath::Session::from_agent_prompt("You review answers."), provider}));
    }
    rath::Session forward(rath::Session input) override {
        auto chosen = router->select(input, {billing, tech});
        return chosen->is_empty() ? input : (*chosen)(input);
    }
    std::string type_name() const override { return "HelpDesk"; }
    std::shared_ptr<flow::AgentImpl> billing, tech;
    std::shared_ptr<flow::SelectorImpl> router;
};

void print_problems(const std::vector<std::string>& problems) {
    if (problems.empty()) {
        std::printf("validate() problems: none \xE2\x80\x94 ready to run\n");
        return;
    }
    std::printf("validate() problems:\n");
    for (const auto& p : problems) std::printf("  - %s\n", p.c_str());
}

}  // namespace

int main() {
    auto llm = example::make_llm(R"({
      "rules": [{"match": {"contains": "Candidate workflows"}, "respond": {"text": "1"}}],
      "responses": [{"text": "Restart the router, then re-join the Wi-Fi network: the drop-outs should stop."}]
    })");

    example::ScratchDir dir("12-compile");
    memory::MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", dir.path.string()}};
    memory::MemoryStorePtr store = memory::make_local_memory_backend()->open(spec);

    flow::AgentOptions billing{.loop = {.provider = llm.provider}, .description = "billing and refunds"};
    billing.memory = store;
    flow::AgentOptions tech{.loop = {.provider = llm.provider}, .description = "technical support"};
    auto desk = std::make_shared<HelpDesk>(llm.provider, billing, tech);

    flow::CompiledWorkflow compiled = desk->compile();
    std::printf("Compiled workflow:\n%s\n", compiled.repr().c_str());
    std::printf("Reachable provider models: [");
    const auto models = compiled.manifest().provider_models();
    for (std::size_t i = 0; i < models.size(); ++i) std::printf("%s'%s'", i ? ", " : "", models[i].c_str());
    std::printf("]\nAgents:\n");
    for (const auto& a : compiled.manifest().agents)
        std::printf("  - %s: model=%s memory=%s\n", a.path.c_str(), a.provider.model.value_or("(env/config)").c_str(),
                    a.has_memory ? "true" : "false");
    std::printf("Dynamic nodes:\n");
    for (const auto& d : compiled.manifest().dynamic_nodes) std::printf("  - %s: %s\n", d.path.c_str(), d.kind.c_str());

    // A desk with three mistakes, caught before anything runs.
    std::printf("\n--- a desk with mismatches ---\n");
    rath::llm::Provider unknown_kind = llm.provider;
    unknown_kind.provider_kind = "gemini";
    flow::AgentOptions clashing{.loop = {.provider = llm.provider}};
    clashing.loop.tools = rath::tool::ToolSet{rath::tool::make_tool<NoArgs>(
        "run_shell_command", "my own shell", [](rath::Session, NoArgs) { return boost::json::value("ok"); })};
    auto broken = std::make_shared<HelpDesk>(llm.provider, flow::AgentOptions{.loop = {.provider = unknown_kind}},
                                             clashing);
    auto in_docker = rath::Session::from_user_message("My router keeps dropping the Wi-Fi.");
    in_docker.to("docker");
    try {
        (void)broken->compile().validate(in_docker, /*raise_on_error=*/true);
        std::printf("no mismatch found (unexpected)\n");
        return 1;
    } catch (const flow::ValidationError& e) {
        std::printf("caught: %s\n", e.what());
    }

    // The valid desk, validated against the session it will run.
    std::printf("\n--- the valid desk ---\n");
    auto input = rath::Session::from_user_message("My router keeps dropping the Wi-Fi.");
    input.to("local");
    const auto problems = compiled.validate(input);
    print_problems(problems);
    if (!problems.empty()) return 1;
    {
        flow::CompiledWorkflow::Scope scope(compiled);
        std::printf("Inside lifecycle: %zu agents ready (%zu memory store held, refcount %d).\n",
                    compiled.manifest().agents.size(), scope.stores().size(), store->refcount());
        rath::Session out = compiled(input);
        std::printf("answer: %s\n", out.text().value_or("").c_str());
        input.close_sandbox();
        out.close_sandbox();
    }
    std::printf("Resources released on exit (refcount %d).\n", store->refcount());
    desk->billing->close();  // the agent's reference was the last: the store closes
    std::printf("store closed: %s\n", store->closed() ? "true" : "false");
    return 0;
}
