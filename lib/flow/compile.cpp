// compile(), the manifest and the pre-flight checks (memory_flow.md §4.7).
#include <rath/flow/compile.hpp>

#include <rath/backend/backend.hpp>
#include <rath/backend/registry.hpp>
#include <rath/flow/agent.hpp>
#include <rath/flow/selector.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/registry.hpp>
#include <rath/log.hpp>
#include <rath/memory/store.hpp>

#include "lib/text/pyrepr.hpp"

#include <algorithm>
#include <set>

namespace rath::flow {

namespace {

const char* const selector_reason =
    "Selector routes to a workflow chosen by the model at runtime; successor set is not statically known";

std::string join_path(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

void collect(const Workflow& node, const std::string& prefix, ResourceManifest& out) {
    if (dynamic_cast<const SelectorImpl*>(&node))
        out.dynamic_nodes.push_back({prefix.empty() ? node.type_name() : prefix, "selector", selector_reason});
    const auto* agent = dynamic_cast<const AgentImpl*>(&node);
    for (const auto& [name, param] : node.named_agents()) {
        AgentResource r;
        r.path = join_path(prefix, name);
        r.provider = param->provider;
        r.memory = param->memory;
        r.has_memory = param->memory != nullptr;
        r.agent_session_id = param->agent_session.id();
        if (agent && param == agent->agent()) {
            AgentOptions o = agent->options();
            r.is_agent = true;
            r.tools = o.loop.tools;
            r.streams = static_cast<bool>(o.loop.on_event);
            r.custom_executor = o.loop.executor != nullptr;
            r.client = o.loop.client;
        }
        out.agents.push_back(std::move(r));
    }
    for (const auto& [name, child] : node.named_children()) collect(*child, join_path(prefix, name), out);
}

// The chat client a run of `r` would make, or null when none can be made (no key
// resolves, or the kind's factory throws for another reason: both are "unresolved").
std::shared_ptr<llm::ChatClient> client_for(const AgentResource& r) {
    try {
        return llm::chat_client_for(r.provider);
    } catch (const std::exception& e) {
        rath::log(LogLevel::debug, "rath.flow", "validate: no chat client for agent '" + r.path + "': " + e.what());
        return nullptr;
    }
}

void check_agent(const AgentResource& r, const std::vector<std::string>& kinds, std::vector<std::string>& problems) {
    const std::string who = "agent '" + r.path + "': ";
    if (r.memory && r.memory->closed())
        problems.push_back(who + "memory store is closed (" + rath::detail::pyrepr(r.memory->handle()) + ")");
    if (r.is_agent) {
        try {
            (void)r.tools.table();
        } catch (const std::exception& e) {
            problems.push_back(who + e.what());
        }
        if (r.streams && r.custom_executor)
            problems.push_back(who + "on_event with a custom executor is not supported");
    }
    // A custom executor or client is the model path itself: the provider only names the
    // model then, so its kind and key are not needed.
    if (r.custom_executor) return;
    std::shared_ptr<llm::ChatClient> client = r.client;
    if (!client) {
        const std::string kind = r.provider.kind();
        if (!std::binary_search(kinds.begin(), kinds.end(), kind)) {
            problems.push_back(who + "unknown provider_kind=" + rath::detail::pyrepr(kind) + " (registered: " +
                               rath::detail::pyrepr_list(kinds) + ")");
            return;
        }
        client = client_for(r);
        if (!client) {
            problems.push_back(who + "no api credential resolves for provider_kind=" + rath::detail::pyrepr(kind) +
                               " (set Provider.api_key, the vendor env var, or a config provider)");
            return;
        }
    }
    if (r.is_agent && r.streams && !client->supports_streaming())
        problems.push_back(who + "on_event needs a streaming client; provider_kind=" +
                           rath::detail::pyrepr(std::string(client->kind())) + " does not stream");
}

void check_input(const Session& input, std::vector<std::string>& problems) {
    const std::string who = "input session: ";
    if (auto sb = input.sandbox()) {
        if (!sb->closed()) return;
        if (!input.sandbox_backend()) {
            problems.push_back(who + "its sandbox is closed and it targets no backend to open another");
            return;
        }
    }
    const auto target = input.sandbox_backend();
    if (!target) {
        problems.push_back(who +
                           "no sandbox backend: the agents' built-in tools run in one (session.to(\"local\") or "
                           "bind_sandbox(...))");
        return;
    }
    const std::vector<std::string> names = backend::backend_names();
    if (std::find(names.begin(), names.end(), *target) == names.end()) {
        std::vector<std::string> sorted = names;
        std::sort(sorted.begin(), sorted.end());
        problems.push_back(who + "unknown sandbox backend " + rath::detail::pyrepr(*target) + " (registered: " +
                           rath::detail::pyrepr_list(sorted) + ")");
    } else if (!backend::is_backend_available(*target)) {
        problems.push_back(who + "sandbox backend " + rath::detail::pyrepr(*target) + " is not available here");
    }
}

std::string validation_message(const std::vector<std::string>& problems) {
    std::string m = "workflow pre-flight validation failed:";
    for (const auto& p : problems) m += "\n  - " + p;
    return m;
}

// Every distinct store bound to a param reachable from `node`: params, then children.
void collect_stores(const Workflow& node, std::vector<memory::MemoryStorePtr>& out) {
    for (const auto& [name, param] : node.named_agents())
        if (param->memory && std::find(out.begin(), out.end(), param->memory) == out.end())
            out.push_back(param->memory);
    for (const auto& [name, child] : node.named_children()) collect_stores(*child, out);
}

}  // namespace

std::vector<std::string> ResourceManifest::provider_models() const {
    std::set<std::string> s;
    for (const auto& a : agents)
        if (a.provider.model && !a.provider.model->empty()) s.insert(*a.provider.model);
    return {s.begin(), s.end()};
}

std::vector<std::string> ResourceManifest::provider_kinds() const {
    std::set<std::string> s;
    for (const auto& a : agents) s.insert(a.provider.kind());
    return {s.begin(), s.end()};
}

ResourceManifest collect_manifest(const Workflow& root) {
    ResourceManifest m;
    collect(root, "", m);
    return m;
}

ValidationError::ValidationError(std::vector<std::string> problems)
    : std::invalid_argument(validation_message(problems)), problems_(std::move(problems)) {}

CompiledWorkflow::CompiledWorkflow(std::shared_ptr<Workflow> workflow) : workflow_(std::move(workflow)) {
    if (!workflow_) throw std::invalid_argument("CompiledWorkflow: null workflow");
    manifest_ = collect_manifest(*workflow_);
}

std::vector<std::string> CompiledWorkflow::validate(bool raise_on_error) const {
    std::vector<std::string> problems;
    const std::vector<std::string> kinds = llm::registered_kinds();
    for (const auto& r : manifest_.agents) check_agent(r, kinds, problems);
    if (raise_on_error && !problems.empty()) throw ValidationError(problems);
    return problems;
}

std::vector<std::string> CompiledWorkflow::validate(const Session& input, bool raise_on_error) const {
    std::vector<std::string> problems = validate(false);
    check_input(input, problems);
    if (raise_on_error && !problems.empty()) throw ValidationError(problems);
    return problems;
}

std::string CompiledWorkflow::repr() const {
    return "CompiledWorkflow(" + workflow_->repr() + ", agents=" + std::to_string(manifest_.agents.size()) +
           ", dynamic_nodes=" + std::to_string(manifest_.dynamic_nodes.size()) + ")";
}

CompiledWorkflow::Scope::Scope(const CompiledWorkflow& compiled) {
    std::vector<memory::MemoryStorePtr> stores;
    collect_stores(*compiled.workflow(), stores);
    held_.reserve(stores.size());
    try {
        for (auto& s : stores) held_.push_back(s->acquire());
    } catch (...) {
        for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
            try {
                (*it)->release();
            } catch (const std::exception& e) {
                rath::log(LogLevel::warning, "rath.flow", std::string("releasing a memory store failed: ") + e.what());
            }
        }
        throw;
    }
}

CompiledWorkflow::Scope::~Scope() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
        try {
            (*it)->release();
        } catch (const std::exception& e) {
            rath::log(LogLevel::warning, "rath.flow", std::string("releasing a memory store failed: ") + e.what());
        } catch (...) {
            rath::log(LogLevel::warning, "rath.flow", "releasing a memory store failed");
        }
    }
}

CompiledWorkflow compile(std::shared_ptr<Workflow> workflow) { return CompiledWorkflow(std::move(workflow)); }

CompiledWorkflow Workflow::compile() { return CompiledWorkflow(shared_from_this()); }

}  // namespace rath::flow
