#include <rath/flow/agent.hpp>

#include <rath/llm/registry.hpp>

#include <algorithm>
#include <stdexcept>

namespace rath::flow {

Agent::Agent(std::string system_prompt, AgentOptions options) : Workflow(options.description), options_(std::move(options)) {
    if (!options_.provider && !options_.model)
        throw std::invalid_argument("flow.Agent requires either provider=Provider(...) or model=\"...\"");
    llm::Provider provider = options_.provider.value_or(llm::Provider{});
    if (!provider.model && options_.model) provider.model = options_.model;
    agent_ = register_param("agent", std::make_shared<AgentParam>(
                                         AgentParam{Session::from_agent_prompt(std::move(system_prompt)), provider}));
    if (options_.max_concurrent_runs > 0) admission_ = std::make_shared<async::Admission>(options_.max_concurrent_runs);
}

std::shared_ptr<const LoopOptions> Agent::loop_options() const {
    // A parked session used to carry its own copy (~1 KB, with the provider's strings);
    // comparing the provider is cheaper than copying it. A provider with a budget
    // callback never compares equal, so it is copied per run as before.
    std::lock_guard lk(snapshot_mu_);
    if (snapshot_ && llm::same_settings(snapshot_->provider, agent_->provider)) return snapshot_;
    auto o = std::make_shared<LoopOptions>();
    o->provider = agent_->provider;
    o->tools = options_.tools;
    o->executor = options_.executor;
    o->client = options_.client;
    o->max_tool_rounds = options_.max_tool_rounds;
    o->on_event = options_.on_event;
    o->persist = options_.persist;
    o->persist_path = options_.persist_path;
    o->runtime = options_.runtime;
    o->admission = admission_;
    if (!o->client && !o->executor) {
        // One client per snapshot, shared by its sessions, instead of one per run (each
        // resolving key, URL and headers again). Built here, on the caller's thread; if
        // it cannot be built (no key, unknown kind), the loop builds it per run and
        // reports the error when the output is read, as before.
        try {
            o->client = llm::chat_client_for(o->provider);
        } catch (const std::exception&) {
        }
    }
    snapshot_ = o;
    return o;
}

Session Agent::forward(Session input) { return run_session_loop(input, agent_->agent_session, loop_options()); }

boost::asio::awaitable<Session> Agent::async_forward(Session input) {
    // Named, not a temporary inside the co_await expression (GCC 12 destroys aggregate
    // temporaries there twice).
    std::shared_ptr<const LoopOptions> options = loop_options();
    Session agent_session = agent_->agent_session;
    co_return co_await async_run_session_loop(std::move(input), std::move(agent_session), std::move(options));
}

void Agent::register_tool(std::shared_ptr<tool::FlowToolCall> tool) {
    for (auto& t : options_.tools)
        if (t->name() == tool->name()) return;
    options_.tools.push_back(std::move(tool));
    std::lock_guard lk(snapshot_mu_);
    snapshot_.reset();
}

void Agent::unregister_tool(std::string_view name) {
    auto& v = options_.tools;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& t) { return t->name() == name; }), v.end());
    std::lock_guard lk(snapshot_mu_);
    snapshot_.reset();
}

}  // namespace rath::flow
