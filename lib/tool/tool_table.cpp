#include <rath/tool/system_tools.hpp>
#include <rath/tool/tool_table.hpp>

#include "lib/text/pyrepr.hpp"

#include <algorithm>

namespace rath::tool {

void ToolTable::add(FlowToolPtr tool) {
    if (!tool) throw ToolArgumentError("tool table: null tool", "TypeError");
    if (contains(tool->name()))
        throw ToolNameConflictError("user tool " + rath::detail::pyrepr(tool->name()) + " shadows a built-in system tool");
    tools_.push_back(std::move(tool));
}

FlowToolPtr ToolTable::find(std::string_view name) const {
    for (auto& t : tools_)
        if (t->name() == name) return t;
    return nullptr;
}

std::vector<std::string> ToolTable::names() const {
    std::vector<std::string> out;
    for (auto& t : tools_) out.push_back(t->name());
    return out;
}

ToolTable merge_tools_for_loop(const std::vector<FlowToolPtr>& user_tools) {
    ToolTable t = global_system_tools();
    for (auto& u : user_tools) t.add(u);
    return t;
}

std::vector<llm::FunctionTool> tools_to_schemas(const ToolTable& table) {
    std::vector<llm::FunctionTool> out;
    for (auto& t : table.tools()) {
        llm::FunctionTool f;
        f.name = t->name();
        f.description = t->description();
        f.parameters = t->parameters();
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return out;
}

}  // namespace rath::tool
