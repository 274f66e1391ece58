#pragma once
// Agent: the nn.Linear analogue (memory_flow.md §4.3) — a system prompt, a provider and
// tools around the agent loop. `Session out = agent(in);` returns at once with `out`
// pending; reading its transcript waits for the loop.
//
// Memory (memory_flow.md §4.3, §4.4): with AgentOptions::memory set, each run first
// recalls from the store (the policy, by default DefaultRecallInjection: a Find with
// the last user message as the query) and the loop sees the recalled rows in front of
// the user's rows, in a fork of the input; the fork is pending until the recall is
// done, so forward() still returns at once. With commit_on_forward, each finished run's
// transcript is committed to the store afterwards, on the runtime: reading the output
// never waits for the commit, and a commit that fails is logged (channel "rath.flow")
// and reported to on_commit, never thrown into the output. The agent holds one
// reference on the store (acquired by the constructor, released by close() or the
// destructor); an in-flight commit holds its own until it ends.
//
// Thread safety: forward/async_forward and the tool registration functions may be
// called from any threads at once. A run uses the agent's settings (provider, tools) as
// they were when it was started; a change is picked up by the runs started after it.
// Cancellation and errors: those of run_session_loop (loop/session_loop.hpp). The memory
// calls (remember_memory, ...) throw std::runtime_error("agent has no memory store")
// without a store and MemoryStoreClosed on a closed one; their data-plane problems are
// ExecutionFailure values. The sync forms block (DeadlockError on a runtime io thread).
#include <rath/flow/memory_inject.hpp>
#include <rath/flow/module_holder.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/loop/options.hpp>
#include <rath/memory/fwd.hpp>
#include <rath/memory/result.hpp>
#include <rath/memory/spec.hpp>
#include <rath/tool/tool_set.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <functional>
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

    // The agent's memory store (null: no memory). The constructor acquires it (throws
    // MemoryStoreClosed when it is closed).
    memory::MemoryStorePtr memory{};
    // What each run injects (null: DefaultRecallInjection() — top 4 hits, whole store).
    std::shared_ptr<const MemoryInjectionPolicy> memory_inject{};
    // Commit each finished run's transcript (session id = the output's id, wait=false)
    // after the run, without delaying its output. A run that failed is not committed.
    bool commit_on_forward = false;
    // Called on a runtime thread with each commit_on_forward result (a CommitResult, or
    // an ExecutionFailure, which is also logged; an exception becomes Failure(internal)).
    std::function<void(const Session& out, const memory::MemoryResult&)> on_commit{};
};

class AgentImpl : public Workflow {
public:
    // Throws std::invalid_argument with neither a provider nor a model.
    explicit AgentImpl(std::string system_prompt, AgentOptions options = {});
    // Releases the memory store, as close() does.
    ~AgentImpl() override;

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

    // ---- memory (memory_flow.md §4.3) ----
    // The bound store, or null (never bound, or closed).
    memory::MemoryStorePtr memory() const;
    // Unbinds the store and releases the agent's reference (closing the store when it
    // was the last). Idempotent; a no-op without memory.
    void close();
    // Writes `content` at memory://<scope>/memories/<category>/<8 hex of a uuid4>.
    memory::MemoryResult remember_memory(std::string content, std::string scope = "user",
                                         std::string category = "preferences", bool wait = false);
    [[nodiscard]] boost::asio::awaitable<memory::MemoryResult> async_remember_memory(
        std::string content, std::string scope = "user", std::string category = "preferences", bool wait = false);
    // A Find for `query`.
    memory::MemoryResult recall_memory(std::string query, int top_k = 4,
                                       std::optional<std::string> target_uri = std::nullopt);
    [[nodiscard]] boost::asio::awaitable<memory::MemoryResult> async_recall_memory(
        std::string query, int top_k = 4, std::optional<std::string> target_uri = std::nullopt);
    // Commits `session`'s transcript (commit_messages) under its id; waits for a pending
    // session, and throws its error.
    memory::MemoryResult commit_memory(const Session& session, bool wait = false);
    [[nodiscard]] boost::asio::awaitable<memory::MemoryResult> async_commit_memory(Session session, bool wait = false);

private:
    struct MemoryBinding {
        memory::MemoryStorePtr store;
        std::shared_ptr<const MemoryInjectionPolicy> policy;
        bool commit = false;
        std::function<void(const Session&, const memory::MemoryResult&)> on_commit;
    };
    MemoryBinding memory_binding() const;
    memory::MemoryStorePtr require_memory() const;
    // One read-only snapshot shared by the agent's runs, rebuilt when the tools or
    // agent()->provider changed since it was made.
    std::shared_ptr<const LoopOptions> loop_options() const;

    mutable std::mutex mu_;  // options_.loop.tools, options_.memory and snapshot_
    AgentOptions options_;
    std::shared_ptr<AgentParam> agent_;
    std::shared_ptr<async::Admission> admission_;
    mutable std::shared_ptr<const LoopOptions> snapshot_;
};

// The store for AgentOptions::memory from a name (memory_flow.md §4.3): a
// `memory.providers` entry of the config file of that name (which shadows a backend
// name) opened through its backend_kind with MemoryStoreSpec::from_config(name), else a
// registered backend of that name opened with no spec ("local": a new store under
// <config-dir>/memory/local/). The store has refcount 0: binding it to an Agent takes the
// reference whose release closes it. Blocks (DeadlockError on a runtime io thread);
// throws MemoryBackendNotFound for an unknown name, ConfigError for a malformed file.
[[nodiscard]] memory::MemoryStorePtr open_memory(std::string_view name);
// The same from a spec, through the default memory backend.
[[nodiscard]] memory::MemoryStorePtr open_memory(memory::MemoryStoreSpec spec);

class Agent : public ModuleHolder<AgentImpl> {
public:
    using ModuleHolder<AgentImpl>::ModuleHolder;
    Agent(std::string system_prompt, AgentOptions options = {})
        : ModuleHolder<AgentImpl>(std::make_shared<AgentImpl>(std::move(system_prompt), std::move(options))) {}
};

}  // namespace rath::flow
