#pragma once
// Sequential: workflows applied one after another, as libtorch's Sequential
// (torch/nn/modules/container/sequential.h). `Sequential chain(agent, compressor);
// Session out = chain(in);` is compressor(agent(in)). Children are registered as "0",
// "1", ... in order. Nothing waits: each step returns a pending session the next one
// takes, and an error anywhere surfaces where the output is read.
//
// Thread safety: push_back is configuration (before running); forward may run from
// several threads at once. Cancellation and errors: those of the children.
#include <rath/flow/module_holder.hpp>
#include <rath/flow/workflow.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rath::flow {

class SequentialImpl : public Workflow {
public:
    SequentialImpl() = default;
    template <class... Modules>
    explicit SequentialImpl(Modules&&... modules) {
        (push_back(std::shared_ptr<Workflow>(std::forward<Modules>(modules))), ...);
    }

    // Appends a step (its child name is its position).
    void push_back(std::shared_ptr<Workflow> module);
    std::size_t size() const noexcept { return steps_.size(); }
    bool empty() const noexcept { return steps_.empty(); }
    const std::shared_ptr<Workflow>& operator[](std::size_t i) const { return steps_.at(i); }
    std::vector<std::shared_ptr<Workflow>>::const_iterator begin() const noexcept { return steps_.begin(); }
    std::vector<std::shared_ptr<Workflow>>::const_iterator end() const noexcept { return steps_.end(); }

    // The input through every step, in order (the input itself when empty).
    Session forward(Session input) override;
    [[nodiscard]] boost::asio::awaitable<Session> async_forward(Session input) override;
    // A Sequential of the steps' clones.
    std::shared_ptr<Workflow> clone() const override;
    std::string type_name() const override { return "Sequential"; }

private:
    std::vector<std::shared_ptr<Workflow>> steps_;
};

RATH_MODULE(Sequential);

}  // namespace rath::flow
