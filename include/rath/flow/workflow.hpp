#pragma once
// Workflow: the nn.Module analogue (memory_flow.md §4.1, §8.1). Subclass it, override
// forward(Session) -> Session, and register children and agent params explicitly (C++
// cannot intercept attribute assignment); children and params are listed sorted by
// name. Users hold workflows through holders (module_holder.hpp): `Agent`, `Compressor`,
// `Selector`, `Sequential` and their own via RATH_MODULE.
//
// Thread safety: registration (register_module, register_param, unregister, to) is
// configuration: do it before running the workflow, not while it runs. forward may be
// called from several threads at once when the workflow's own state allows (the
// built-ins do). Cancellation and errors: those of the sessions forward returns, which
// surface where they are first read.
#include <rath/flow/agent_param.hpp>
#include <rath/flow/module_holder.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::flow {

class CompiledWorkflow;  // rath/flow/compile.hpp

class Workflow : public std::enable_shared_from_this<Workflow> {
public:
    explicit Workflow(std::string description = {}) : description_(std::move(description)) {}
    virtual ~Workflow();
    Workflow& operator=(const Workflow&) = delete;

    // The computation. Returning a pending session is fine (and the norm for agents):
    // nothing here needs to wait for its input or output to materialize.
    virtual Session forward(Session input) = 0;
    // The same for coroutine callers. The default runs forward() on the runtime's
    // blocking pool, so a forward() that reads transcripts never blocks an io thread.
    [[nodiscard]] virtual boost::asio::awaitable<Session> async_forward(Session input);

    // forward(input). Does not synchronize a pending input: reading the output waits
    // for the whole chain, and an error anywhere in it surfaces there, once.
    Session operator()(Session input) { return forward(std::move(input)); }

    // A deep copy: new modules and new agent params with the same settings, sharing
    // nothing mutable with this one. Built-ins implement it; a workflow of your own gets
    // it by deriving from Cloneable<Self>. Throws std::logic_error otherwise.
    [[nodiscard]] virtual std::shared_ptr<Workflow> clone() const;

    // Class name used by repr ("Agent", "Compressor", ...).
    virtual std::string type_name() const { return "Workflow"; }
    // EmptyWorkflow says yes; Selector callers use it to detect "done".
    virtual bool is_empty() const noexcept { return false; }

    const std::string& description() const noexcept { return description_; }
    void set_description(std::string d) { description_ = std::move(d); }

    // Registers `module` as child `name` (replacing a child or param of that name) and
    // returns it, as a pointer or as the holder it came in.
    template <class M>
        requires std::derived_from<M, Workflow>
    std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
        register_child(std::move(name), module);
        return module;
    }
    template <class M>
        requires std::derived_from<M, Workflow>
    std::shared_ptr<M> register_module(std::string name, const ModuleHolder<M>& module) {
        return register_module(std::move(name), module.ptr());
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

    // The pre-flight pass over this tree (rath/flow/compile.hpp). Needs this workflow to
    // be owned by a shared_ptr (as holders and register_module make it): throws
    // std::bad_weak_ptr otherwise.
    [[nodiscard]] CompiledWorkflow compile();

    // "Name()" or "Name(\n  (agent): AgentParam(...)\n  (child): Child(...)\n)".
    std::string repr() const;

protected:
    // For Cloneable: copies the description only (the copy registers its own modules
    // in reset()).
    Workflow(const Workflow& other) : std::enable_shared_from_this<Workflow>(), description_(other.description_) {}
    // Gives this module's params the values of `other`'s params of the same names, and
    // its children (recursively) those of `other`'s children of the same names.
    void copy_params_from(const Workflow& other);

private:
    void register_child(std::string name, std::shared_ptr<Workflow> child);
    std::string description_;
    std::vector<std::pair<std::string, std::shared_ptr<Workflow>>> children_;  // kept sorted
    std::vector<std::pair<std::string, std::shared_ptr<AgentParam>>> params_;  // kept sorted
};

std::ostream& operator<<(std::ostream& os, const Workflow& w);

// libtorch's Cloneable: derive a workflow of your own from Cloneable<Self> and give it
// a `void reset()` that (re)creates its modules and params with register_module and
// register_param (its constructor usually calls reset()). clone() copy-constructs Self,
// calls reset() on the copy, then gives the copy's params the values of this one's.
template <class Derived>
class Cloneable : public Workflow {
public:
    using Workflow::Workflow;

    virtual void reset() = 0;

    std::shared_ptr<Workflow> clone() const override {
        auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
        copy->reset();
        copy->copy_params_from(*this);
        return copy;
    }

protected:
    Cloneable(const Cloneable& other) : Workflow(other) {}
};

// A workflow that returns its input unchanged (the Selector's "nothing applies").
class EmptyWorkflow final : public Workflow {
public:
    EmptyWorkflow() = default;
    Session forward(Session input) override { return input; }
    [[nodiscard]] boost::asio::awaitable<Session> async_forward(Session input) override;
    std::shared_ptr<Workflow> clone() const override { return std::make_shared<EmptyWorkflow>(); }
    std::string type_name() const override { return "EmptyWorkflow"; }
    bool is_empty() const noexcept override { return true; }
};

}  // namespace rath::flow
