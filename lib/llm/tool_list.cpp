#include <rath/llm/tool_list.hpp>

#include <array>
#include <mutex>

namespace rath::llm {

struct ToolList::State {
    explicit State(std::vector<FunctionTool> t) : tools(std::move(t)) {}
    std::vector<FunctionTool> tools;
    // Filled once per slot; the list itself never changes.
    mutable std::array<std::once_flag, 2> once{};
    mutable std::array<std::string, 2> encoded{};
};

ToolList::ToolList() : ToolList(std::vector<FunctionTool>{}) {}

ToolList::ToolList(std::vector<FunctionTool> tools) : state_(std::make_shared<const State>(std::move(tools))) {}

const std::vector<FunctionTool>& ToolList::tools() const noexcept { return state_->tools; }

const std::string& ToolList::encoded(Encoding slot,
                                     const std::function<std::string(const std::vector<FunctionTool>&)>& make) const {
    const auto i = static_cast<std::size_t>(slot);
    std::call_once(state_->once[i], [&] { state_->encoded[i] = make(state_->tools); });
    return state_->encoded[i];
}

std::shared_ptr<const std::string> ToolList::encoded_shared(
    Encoding slot, const std::function<std::string(const std::vector<FunctionTool>&)>& make) const {
    const std::string& text = encoded(slot, make);
    return std::shared_ptr<const std::string>(state_, &text);  // aliasing: keeps the list alive
}

}  // namespace rath::llm
