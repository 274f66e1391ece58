#pragma once
// Agent: the nn.Linear analogue (memory_flow.md §4.3) — a system prompt, a provider
// and tools. `Session out = agent(in);` returns at once with `out` pending; reading
// its transcript waits for the loop. Memory (remember/recall/commit) is not part of
// this build.
#include <rath/flow/workflow.hpp>
#include <rath/session_loop.hpp>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::flow {

struct AgentOptions {
    std::optional<llm::Provider> provider{};  // with neither provider nor model: error
    std::optional<std::string> model{};       // fills the provider's model when unset
    std::vector<std::shared_ptr<tool::FlowToolCall>> tools{};
    StreamCallback on_event{};
    std::string description{};  // what the Selector reads
    int max_tool_rounds = 64;
    bool persist = false;
    std::optional<std::filesystem::path> persist_path{};
    std::shared_ptr<LoopExecutor> executor{};  // replaces the chat client (tests, embedders)
    // The chat client to call (e.g. one built with chat_client_for(provider, {.http = ...})
    // to set the connection cap); default: chat_client_for(provider), built once and
    // shared by the agent's runs until agent()->provider changes (key, URL and
    // environment are read then, not per run).
    std::shared_ptr<llm::ChatClient> client{};
    async::Runtime* runtime = nullptr;
    // 0: every run starts at once. N: at most N of this agent's runs (called through
    // forward / operator()) run at a time; the others wait, in call order, before they
    // start, holding no frames or requests (see LoopOptions::admission). For fan-outs
    // far wider than the connection cap, e.g. the cap or twice it.
    std::size_t max_concurrent_runs = 0;
};

class Agent : public Workflow {
public:
    explicit Agent(std::string system_prompt, AgentOptions options = {});

    Session forward(Session input) override;
    boost::asio::awaitable<Session> async_forward(Session input) override;
    std::string type_name() const override { return "Agent"; }

    const std::shared_ptr<AgentParam>& agent() const noexcept { return agent_; }
    const std::vector<std::shared_ptr<tool::FlowToolCall>>& tools() const noexcept { return options_.tools; }
    // Appends unless a tool of that name is already there.
    void register_tool(std::shared_ptr<tool::FlowToolCall> tool);
    // Removes every tool of that name.
    void unregister_tool(std::string_view name);
    const AgentOptions& options() const noexcept { return options_; }
    // The gate of max_concurrent_runs (null without one): active() and waiting() runs.
    const std::shared_ptr<async::Admission>& admission() const noexcept { return admission_; }

private:
    // One read-only snapshot shared by the agent's sessions, rebuilt when the tools or
    // agent()->provider changed since it was made.
    std::shared_ptr<const LoopOptions> loop_options() const;
    AgentOptions options_;
    std::shared_ptr<AgentParam> agent_;
    std::shared_ptr<async::Admission> admission_;
    mutable std::mutex snapshot_mu_;
    mutable std::shared_ptr<const LoopOptions> snapshot_;
};

}  // namespace rath::flow
