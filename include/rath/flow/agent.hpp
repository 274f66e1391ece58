#pragma once
// Agent: the nn.Linear analogue (memory_flow.md §4.3) — a system prompt, a provider and
// tools around the agent loop. `Session out = agent(in);` returns at once with `out`
// pending; reading its transcript waits for the loop. Memory (remember/recall/commit)
// is not part of this build.
//
// Thread safety: forward/async_forward and the tool registration functions may be
// called from any threads at once. A run uses the agent's settings (provider, tools) as
// they were when it was started; a change is picked up by the runs started after it.
// Cancellation and errors: those of run_session_loop (loop/session_loop.hpp).
#include <rath/flow/module_holder.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/loop/options.hpp>
#include <rath/tool/tool_set.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace rath::flow {

struct AgentOptions {
    // The loop every run of the agent runs with. Its provider is the agent's param
    // (agent()->provider, rebound by to()); with neither a provider (any field set) nor
    // `model` the constructor throws.
    LoopOptions loop{};
    std::optional<std::string> model{};  // fills the provider's model when unset
    std::string description{};           // what the Selector reads
    // 0: every run starts at once. N: at most N of this agent's runs (called through
    // forward / operator()) run at a time; the others wait, in call order, before they
    // start, holding no frames or requests (see LoopOptions::admission). For fan-outs
    // far wider than the connection cap, e.g. the cap or twice it.
    std::size_t max_concurrent_runs = 0;
};

class AgentImpl : public Workflow {
public:
    // Throws std::invalid_argument with neither a provider nor a model.
    explicit AgentImpl(std::string system_prompt, AgentOptions options = {});

    Session forward(Session input) override;
    [[nodiscard]] boost::asio::awaitable<Session> async_forward(Session input) override;
    std::shared_ptr<Workflow> clone() const override;
    std::string type_name() const override { return "Agent"; }

    const std::shared_ptr<AgentParam>& agent() const noexcept { return agent_; }
    // The user tools (a snapshot: a later register_tool does not change it).
    tool::ToolSet tools() const;
    // Appends unless a tool of that name is already there.
    void register_tool(tool::FlowToolPtr tool);
    // Removes every tool of that name.
    void unregister_tool(std::string_view name);
    // The options as given (tools as registered since).
    AgentOptions options() const;
    // The gate of max_concurrent_runs (null without one): active() and waiting() runs.
    const std::shared_ptr<async::Admission>& admission() const noexcept { return admission_; }

private:
    // One read-only snapshot shared by the agent's runs, rebuilt when the tools or
    // agent()->provider changed since it was made.
    std::shared_ptr<const LoopOptions> loop_options() const;

    mutable std::mutex mu_;  // options_.loop.tools and snapshot_
    AgentOptions options_;
    std::shared_ptr<AgentParam> agent_;
    std::shared_ptr<async::Admission> admission_;
    mutable std::shared_ptr<const LoopOptions> snapshot_;
};

class Agent : public ModuleHolder<AgentImpl> {
public:
    using ModuleHolder<AgentImpl>::ModuleHolder;
    Agent(std::string system_prompt, AgentOptions options = {})
        : ModuleHolder<AgentImpl>(std::make_shared<AgentImpl>(std::move(system_prompt), std::move(options))) {}
};

}  // namespace rath::flow
