#pragma once
// The tool table a loop works with (backend_tools.md §6.3): built-ins plus user tools,
// in insertion order, looked up by name.
// Thread safety: not synchronized. Build a table, then share it read-only (reads may
// run from any thread at once); add() must not race with anything.
#include <rath/llm/message.hpp>
#include <rath/tool/flow_tool.hpp>

#include <string_view>
#include <utility>
#include <vector>

namespace rath::tool {

class ToolTable {
public:
    ToolTable() = default;
    // Throws ToolNameConflictError when the name is taken.
    void add(FlowToolPtr tool);
    [[nodiscard]] FlowToolPtr find(std::string_view name) const;  // nullptr when absent
    [[nodiscard]] bool contains(std::string_view name) const { return find(name) != nullptr; }
    [[nodiscard]] std::size_t size() const noexcept { return tools_.size(); }
    [[nodiscard]] const std::vector<FlowToolPtr>& tools() const noexcept { return tools_; }  // insertion order
    [[nodiscard]] std::vector<std::string> names() const;

private:
    std::vector<FlowToolPtr> tools_;
};

// The built-ins followed by `user_tools`; a repeated name throws
// ToolNameConflictError("user tool '<name>' shadows a built-in system tool").
[[nodiscard]] ToolTable merge_tools_for_loop(const std::vector<FlowToolPtr>& user_tools);

// {name, description, parameters (copied), strict unset} for every tool, sorted by name.
[[nodiscard]] std::vector<llm::FunctionTool> tools_to_schemas(const ToolTable& table);

}  // namespace rath::tool
