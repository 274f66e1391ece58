#pragma once
// compile(): the pre-flight pass over a workflow tree (memory_flow.md §4.7). It runs no
// model and materializes no session: it lists what the tree will use (every agent
// param with its provider, the nodes whose successors are chosen at run time) and
// checks, offline, what would otherwise fail only once a run reaches it.
//
//   auto compiled = compile(team);           // or team->compile()
//   for (auto& p : compiled.validate()) ...  // problems, empty when ready
//   CompiledWorkflow::Scope scope(compiled); // holds every memory store for the runs
//   Session out = compiled(input);
//
// Thread safety: a CompiledWorkflow is immutable after construction (the manifest is a
// snapshot); validate() and operator() may be called from any threads at once, as
// the workflow's forward allows. Registration changes made to the workflow afterwards
// are not in the snapshot (compile again). validate() reads the config file and the
// environment (blocking file I/O: not on a runtime io thread).
#include <rath/flow/workflow.hpp>
#include <rath/llm/provider.hpp>
#include <rath/memory/fwd.hpp>
#include <rath/session.hpp>
#include <rath/tool/tool_set.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rath::llm {
class ChatClient;
}

namespace rath::flow {

// One agent param reachable from the root.
struct AgentResource {
    std::string path;                 // dotted: "agent", "worker.agent", "team.billing.agent"
    llm::Provider provider;           // as bound when compiled
    bool has_memory = false;          // a store is bound (presence only)
    std::string agent_session_id;     // the param's system-prompt session
    memory::MemoryStorePtr memory{};  // the bound store, or null
    // The rest describes how the owning Agent runs its loop (left empty for the params of
    // a Compressor, a Selector or a workflow of your own, which call no tools).
    bool is_agent = false;
    tool::ToolSet tools{};                      // its user tools
    bool streams = false;                       // on_event is set
    bool custom_executor = false;               // LoopOptions::executor is set
    std::shared_ptr<llm::ChatClient> client{};  // LoopOptions::client, or null
};

// A node whose successor set is not statically known (a Selector).
struct DynamicNode {
    std::string path;
    std::string kind;  // "selector"
    std::string reason;
};

struct ResourceManifest {
    std::vector<AgentResource> agents;
    std::vector<DynamicNode> dynamic_nodes;

    // Sorted distinct non-empty models.
    [[nodiscard]] std::vector<std::string> provider_models() const;
    // Sorted distinct kinds (unset counts as "openai").
    [[nodiscard]] std::vector<std::string> provider_kinds() const;
};

// Pre-order from `root`: a Selector adds a DynamicNode (its path, "Selector" at the
// root), every node adds its own params (sorted, "<prefix>.<name>" or "<name>" at the
// root), then its children (sorted).
[[nodiscard]] ResourceManifest collect_manifest(const Workflow& root);

// Thrown by validate(true) with the problems: "workflow pre-flight validation failed:"
// then one "\n  - <problem>" per problem.
class ValidationError : public std::invalid_argument {
public:
    explicit ValidationError(std::vector<std::string> problems);
    [[nodiscard]] const std::vector<std::string>& problems() const noexcept { return problems_; }

private:
    std::vector<std::string> problems_;
};

class CompiledWorkflow {
public:
    // Throws std::invalid_argument for a null workflow.
    explicit CompiledWorkflow(std::shared_ptr<Workflow> workflow);

    [[nodiscard]] const std::shared_ptr<Workflow>& workflow() const noexcept { return workflow_; }
    [[nodiscard]] const ResourceManifest& manifest() const noexcept { return manifest_; }
    [[nodiscard]] std::vector<std::pair<std::string, std::shared_ptr<Workflow>>> named_children() const {
        return workflow_->named_children();
    }

    // workflow()->forward(input).
    Session operator()(Session input) const { return workflow_->forward(std::move(input)); }

    // The problems a run would meet, one sentence each, in manifest order; empty when
    // ready. Per agent: a provider_kind no chat client is registered for; no API key
    // resolving for its kind (Provider.api_key, the vendor environment variable, a config
    // entry; litellm needs none); its tools clashing with each other or with the
    // built-ins; on_event with a custom executor or with a client that cannot stream; a
    // closed memory store. With raise_on_error, a non-empty list is thrown as
    // ValidationError instead.
    std::vector<std::string> validate(bool raise_on_error = false) const;
    // The same plus the checks of the session a run will be given, since every agent's
    // built-in tools run in its sandbox: a live sandbox is bound, or it targets a
    // registered backend that is available here.
    std::vector<std::string> validate(const Session& input, bool raise_on_error = false) const;

    // "CompiledWorkflow(<workflow repr>, agents=<n>, dynamic_nodes=<m>)".
    [[nodiscard]] std::string repr() const;

    // The lifecycle guard (Python's `with wf.compile():`): takes one reference on every
    // distinct memory store bound to a param reachable from the root (walked afresh:
    // params, then children), releasing them in reverse order when it ends. If an
    // acquire throws (MemoryStoreClosed) the ones taken are released and the error
    // propagates. Release errors are swallowed (the stores log them).
    class Scope {
    public:
        explicit Scope(const CompiledWorkflow& compiled);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;
        // The stores held, in acquisition order.
        [[nodiscard]] const std::vector<memory::MemoryStorePtr>& stores() const noexcept { return held_; }

    private:
        std::vector<memory::MemoryStorePtr> held_;
    };

private:
    std::shared_ptr<Workflow> workflow_;
    ResourceManifest manifest_;
};

// CompiledWorkflow(workflow): also reachable as workflow->compile().
[[nodiscard]] CompiledWorkflow compile(std::shared_ptr<Workflow> workflow);
template <class M>
[[nodiscard]] CompiledWorkflow compile(const ModuleHolder<M>& workflow) {
    return compile(std::static_pointer_cast<Workflow>(workflow.ptr()));
}

}  // namespace rath::flow
