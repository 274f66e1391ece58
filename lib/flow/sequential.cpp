#include <rath/flow/sequential.hpp>

#include <stdexcept>

namespace rath::flow {

void SequentialImpl::push_back(std::shared_ptr<Workflow> module) {
    if (!module) throw std::invalid_argument("Sequential::push_back: null module");
    register_module(std::to_string(steps_.size()), module);
    steps_.push_back(std::move(module));
}

Session SequentialImpl::forward(Session input) {
    for (const auto& step : steps_) input = step->forward(std::move(input));
    return input;
}

boost::asio::awaitable<Session> SequentialImpl::async_forward(Session input) {
    for (const auto& step : steps_) {
        Workflow& w = *step;
        Session in = std::move(input);  // named: not a temporary inside the co_await (GCC 12)
        input = co_await w.async_forward(std::move(in));
    }
    co_return input;
}

std::shared_ptr<Workflow> SequentialImpl::clone() const {
    auto copy = std::make_shared<SequentialImpl>();
    copy->set_description(description());
    for (const auto& step : steps_) copy->push_back(step->clone());
    return copy;
}

}  // namespace rath::flow
