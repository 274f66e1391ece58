#include <rath/tool/tool_set.hpp>

#include <rath/tool/tool_table.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace rath::tool {

struct ToolSet::State {
    explicit State(std::vector<FlowToolPtr> t) : tools(std::move(t)) {}
    const std::vector<FlowToolPtr> tools;
    std::mutex mu;
    std::optional<ToolTable> table;  // set once, under mu; read without it afterwards
    llm::ToolList schemas;
    std::atomic<bool> built{false};

    void build() {
        if (built.load(std::memory_order_acquire)) return;
        std::lock_guard lk(mu);
        if (built.load(std::memory_order_relaxed)) return;
        ToolTable t = merge_tools_for_loop(tools);  // throws on a name conflict: nothing is kept
        schemas = llm::ToolList(tools_to_schemas(t));
        table.emplace(std::move(t));
        built.store(true, std::memory_order_release);
    }
};

std::shared_ptr<ToolSet::State> ToolSet::empty_state() {
    // Sets without tools (most options structs) share one state and one built table.
    static const auto shared = std::make_shared<State>(std::vector<FlowToolPtr>{});
    return shared;
}

ToolSet::ToolSet() : state_(empty_state()) {}
ToolSet::ToolSet(std::initializer_list<FlowToolPtr> tools) : ToolSet(std::vector<FlowToolPtr>(tools)) {}
ToolSet::ToolSet(std::vector<FlowToolPtr> tools)
    : state_(tools.empty() ? empty_state() : std::make_shared<State>(std::move(tools))) {}

const std::vector<FlowToolPtr>& ToolSet::tools() const noexcept { return state_->tools; }

ToolSet ToolSet::with(FlowToolPtr tool) const {
    if (!tool) throw std::invalid_argument("ToolSet::with: null tool");
    for (const auto& t : tools())
        if (t->name() == tool->name()) return *this;
    std::vector<FlowToolPtr> v = tools();
    v.push_back(std::move(tool));
    return ToolSet(std::move(v));
}

ToolSet ToolSet::without(std::string_view name) const {
    std::vector<FlowToolPtr> v;
    v.reserve(size());
    for (const auto& t : tools())
        if (t->name() != name) v.push_back(t);
    if (v.size() == size()) return *this;
    return ToolSet(std::move(v));
}

const ToolTable& ToolSet::table() const {
    state_->build();
    return *state_->table;
}

const llm::ToolList& ToolSet::schemas() const {
    state_->build();
    return state_->schemas;
}

}  // namespace rath::tool
