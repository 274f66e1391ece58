#pragma once
// Workflow: the nn.Module analogue (memory_flow.md §4.1, §8.1). Subclass it and
// override forward(Session) -> Session; register children and agent params
// explicitly (C++ cannot intercept attribute assignment). Children and params are
// listed sorted by name.
//
//   struct Team : rath::flow::Workflow {
//       std::shared_ptr<Agent> triage = register_module("triage", std::make_shared<Agent>(...));
//       Session forward(Session s) override { return (*triage)(s); }
//   };
#include <rath/flow/agent_param.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::flow {

class Workflow : public std::enable_shared_from_this<Workflow> {
public:
    explicit Workflow(std::string description = {}) : description_(std::move(description)) {}
    virtual ~Workflow();
    Workflow(const Workflow&) = delete;
    Workflow& operator=(const Workflow&) = delete;

    // The computation. Returning a pending session is fine (and the norm for agents):
    // nothing here needs to wait for its input or output to materialize.
    virtual Session forward(Session input) = 0;
    // The same for coroutine callers. The default runs forward() on the runtime's
    // blocking pool, so a forward() that reads transcripts never blocks an io thread.
    virtual boost::asio::awaitable<Session> async_forward(Session input);

    // forward(input). Does not synchronize a pending input: reading the output waits
    // for the whole chain, and an error anywhere in it surfaces there, once.
    Session operator()(Session input) { return forward(std::move(input)); }

    // Class name used by repr ("Agent", "Compressor", ...).
    virtual std::string type_name() const { return "Workflow"; }
    // EmptyWorkflow says yes; Selector callers use it to detect "done".
    virtual bool is_empty() const noexcept { return false; }

    const std::string& description() const noexcept { return description_; }
    void set_description(std::string d) { description_ = std::move(d); }

    template <class M>
    std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
        register_child(std::move(name), module);
        return module;
    }
    std::shared_ptr<AgentParam> register_param(std::string name, std::shared_ptr<AgentParam> param);
    // Removes a child or a param of that name (no-op when absent).
    void unregister(std::string_view name);

    std::vector<std::pair<std::string, std::shared_ptr<Workflow>>> named_children() const;
    std::vector<std::pair<std::string, std::shared_ptr<AgentParam>>> named_agents() const;
    // Self, then every child's modules() in sorted-name order (pre-order).
    std::vector<Workflow*> modules();
    // Calls fn on every module, pre-order.
    void apply(const std::function<void(Workflow&)>& fn);

    // Rebinds the provider of this node's own params (not children's); see AgentParam::to.
    Workflow& to(std::optional<llm::Provider> target = std::nullopt,
                 std::optional<std::string> provider_name = std::nullopt,
                 std::optional<std::string> model = std::nullopt);

    // "Name()" or "Name(\n  (agent): AgentParam(...)\n  (child): Child(...)\n)".
    std::string repr() const;

private:
    void register_child(std::string name, std::shared_ptr<Workflow> child);
    std::string description_;
    std::vector<std::pair<std::string, std::shared_ptr<Workflow>>> children_;  // kept sorted
    std::vector<std::pair<std::string, std::shared_ptr<AgentParam>>> params_;  // kept sorted
};

std::ostream& operator<<(std::ostream& os, const Workflow& w);

// A workflow that returns its input unchanged (the Selector's "nothing applies").
class EmptyWorkflow final : public Workflow {
public:
    EmptyWorkflow() = default;
    Session forward(Session input) override { return input; }
    boost::asio::awaitable<Session> async_forward(Session input) override { co_return input; }
    std::string type_name() const override { return "EmptyWorkflow"; }
    bool is_empty() const noexcept override { return true; }
};

}  // namespace rath::flow
