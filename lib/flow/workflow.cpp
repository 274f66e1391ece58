#include <rath/async/runtime.hpp>
#include <rath/flow/workflow.hpp>

#include <algorithm>
#include <ostream>
#include <stdexcept>

namespace rath::flow {

namespace {

// Indents every line after the first by two spaces (nested repr blocks).
std::string indent_continuation(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 16);
    for (char c : s) {
        out += c;
        if (c == '\n') out += "  ";
    }
    return out;
}

template <class V>
void insert_sorted(std::vector<std::pair<std::string, V>>& v, std::string name, V value) {
    auto it = std::lower_bound(v.begin(), v.end(), name, [](const auto& e, const std::string& n) { return e.first < n; });
    if (it != v.end() && it->first == name)
        it->second = std::move(value);
    else
        v.emplace(it, std::move(name), std::move(value));
}

template <class V>
void erase_name(std::vector<std::pair<std::string, V>>& v, std::string_view name) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& e) { return e.first == name; }), v.end());
}

}  // namespace

Workflow::~Workflow() = default;

boost::asio::awaitable<Session> Workflow::async_forward(Session input) {
    // A user forward() may read transcripts (a blocking wait): run it where blocking
    // is allowed, and resume on the caller's executor.
    auto self = shared_from_this();
    // A named callable, not a lambda temporary inside the co_await expression (GCC 12
    // destroys those twice).
    auto job = [self, input]() mutable { return self->forward(std::move(input)); };
    co_return co_await rath::async::Runtime::async_blocking(rath::async::Runtime::default_runtime().blocking_executor(),
                                                            std::move(job));
}

std::shared_ptr<Workflow> Workflow::clone() const {
    throw std::logic_error(type_name() +
                           " does not implement clone(): derive it from rath::flow::Cloneable<Self> (with a reset() "
                           "that registers its modules) or override clone()");
}

void Workflow::copy_params_from(const Workflow& other) {
    for (auto& [name, mine] : params_)
        for (const auto& [their_name, theirs] : other.params_)
            if (their_name == name) *mine = *theirs;
    for (auto& [name, mine] : children_)
        for (const auto& [their_name, theirs] : other.children_)
            if (their_name == name) mine->copy_params_from(*theirs);
}

boost::asio::awaitable<Session> EmptyWorkflow::async_forward(Session input) { co_return input; }

void Workflow::register_child(std::string name, std::shared_ptr<Workflow> child) {
    if (!child) throw std::invalid_argument("register_module: module '" + name + "' is null");
    if (child.get() == this) throw std::invalid_argument("register_module: a workflow cannot contain itself");
    erase_name(params_, name);  // one name, one slot (no stale registration)
    insert_sorted(children_, std::move(name), std::move(child));
}

std::shared_ptr<AgentParam> Workflow::register_param(std::string name, std::shared_ptr<AgentParam> param) {
    if (!param) throw std::invalid_argument("register_param: param '" + name + "' is null");
    erase_name(children_, name);
    insert_sorted(params_, std::move(name), param);
    return param;
}

void Workflow::unregister(std::string_view name) {
    erase_name(children_, name);
    erase_name(params_, name);
}

std::vector<std::pair<std::string, std::shared_ptr<Workflow>>> Workflow::named_children() const { return children_; }

std::vector<std::pair<std::string, std::shared_ptr<AgentParam>>> Workflow::named_agents() const { return params_; }

std::vector<Workflow*> Workflow::modules() {
    std::vector<Workflow*> out;
    apply([&](Workflow& w) { out.push_back(&w); });
    return out;
}

void Workflow::apply(const std::function<void(Workflow&)>& fn) {
    fn(*this);
    for (auto& [name, child] : children_) child->apply(fn);
}

Workflow& Workflow::to(std::optional<llm::Provider> target, std::optional<std::string> provider_name,
                       std::optional<std::string> model) {
    for (auto& [name, p] : params_) p->to(target, provider_name, model);
    return *this;
}

std::string Workflow::repr() const {
    if (children_.empty() && params_.empty()) return type_name() + "()";
    std::string out = type_name() + "(\n";
    for (auto& [name, p] : params_) out += "  (" + name + "): " + indent_continuation(p->repr()) + "\n";
    for (auto& [name, c] : children_) out += "  (" + name + "): " + indent_continuation(c->repr()) + "\n";
    out += ")";
    return out;
}

std::ostream& operator<<(std::ostream& os, const Workflow& w) { return os << w.repr(); }

}  // namespace rath::flow
