#include <rath/flow/agent.hpp>

#include <rath/async/admission.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/registry.hpp>
#include <rath/loop/session_loop.hpp>

#include <stdexcept>

namespace rath::flow {

AgentImpl::AgentImpl(std::string system_prompt, AgentOptions options)
    : Workflow(options.description), options_(std::move(options)) {
    // A provider with every field unset is "no provider" (memory_flow.md §4.3).
    const bool no_provider = llm::same_settings(options_.loop.provider, llm::Provider{});
    if (no_provider && !options_.model)
        throw std::invalid_argument("flow.Agent requires either provider=Provider(...) or model=\"...\"");
    llm::Provider provider = options_.loop.provider;
    if (!provider.model && options_.model) provider.model = options_.model;
    agent_ = register_param("agent", std::make_shared<AgentParam>(
                                         AgentParam{Session::from_agent_prompt(std::move(system_prompt)), provider}));
    if (options_.max_concurrent_runs > 0) admission_ = std::make_shared<async::Admission>(options_.max_concurrent_runs);
}

std::shared_ptr<const LoopOptions> AgentImpl::loop_options() const {
    // Comparing the provider is cheaper than copying it into every run (a parked
    // session would carry ~1 KB of its strings). A provider with a budget callback never
    // compares equal, so it is copied per run.
    std::lock_guard lk(mu_);
    if (snapshot_ && llm::same_settings(snapshot_->provider, agent_->provider)) return snapshot_;
    auto o = std::make_shared<LoopOptions>(options_.loop);
    o->provider = agent_->provider;
    o->admission = admission_;
    if (!o->client && !o->executor) {
        // One client per snapshot, shared by its runs, instead of one per run (each
        // resolving key, URL and headers again).
        try {
            o->client = llm::chat_client_for(o->provider);
        } catch (const ProviderConfigError&) {
            // No key, unknown kind: each run builds the client itself, fails the same
            // way, and reports it where its output is read (session.md §2.2).
        }
    }
    snapshot_ = o;
    return o;
}

Session AgentImpl::forward(Session input) {
    return run_session_loop(input, agent_->agent_session, loop_options());
}

boost::asio::awaitable<Session> AgentImpl::async_forward(Session input) {
    // Named, not temporaries inside the co_await expression (GCC 12 destroys aggregate
    // temporaries there twice).
    std::shared_ptr<const LoopOptions> options = loop_options();
    Session agent_session = agent_->agent_session;
    co_return co_await async_run_session_loop(std::move(input), std::move(agent_session), std::move(options));
}

std::shared_ptr<Workflow> AgentImpl::clone() const {
    AgentOptions o = options();
    o.loop.provider = agent_->provider;
    auto copy = std::make_shared<AgentImpl>(std::string(), std::move(o));
    *copy->agent_ = *agent_;  // the same prompt session and provider, in a param of its own
    return copy;
}

tool::ToolSet AgentImpl::tools() const {
    std::lock_guard lk(mu_);
    return options_.loop.tools;
}

void AgentImpl::register_tool(tool::FlowToolPtr tool) {
    std::lock_guard lk(mu_);
    options_.loop.tools = options_.loop.tools.with(std::move(tool));
    snapshot_.reset();
}

void AgentImpl::unregister_tool(std::string_view name) {
    std::lock_guard lk(mu_);
    options_.loop.tools = options_.loop.tools.without(name);
    snapshot_.reset();
}

AgentOptions AgentImpl::options() const {
    std::lock_guard lk(mu_);
    return options_;
}

}  // namespace rath::flow
