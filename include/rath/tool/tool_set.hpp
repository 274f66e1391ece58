#pragma once
// ToolSet: the user tools of a loop or an agent, as an immutable value. The table the
// loop looks calls up in (the six built-ins plus these, backend_tools.md §6.3) and the
// schemas it sends are built once, on first use, and shared by every copy of the set:
// every session of a fan-out over one set uses one table and one encoded tool list,
// and they are released with the last copy (no process-wide cache).
//
// Thread safety: a ToolSet is immutable; copies and concurrent reads are safe.
#include <rath/llm/tool_list.hpp>
#include <rath/tool/flow_tool.hpp>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

namespace rath::tool {

class ToolTable;

class ToolSet {
public:
    ToolSet();
    ToolSet(std::initializer_list<FlowToolPtr> tools);
    ToolSet(std::vector<FlowToolPtr> tools);  // NOLINT(google-explicit-constructor): a vector is a set of tools

    [[nodiscard]] const std::vector<FlowToolPtr>& tools() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return tools().size(); }
    [[nodiscard]] bool empty() const noexcept { return tools().empty(); }
    [[nodiscard]] std::vector<FlowToolPtr>::const_iterator begin() const noexcept { return tools().begin(); }
    [[nodiscard]] std::vector<FlowToolPtr>::const_iterator end() const noexcept { return tools().end(); }

    // A new set with `tool` appended, unless a tool of that name is already there (then
    // this set). A null tool throws std::invalid_argument.
    [[nodiscard]] ToolSet with(FlowToolPtr tool) const;
    // A new set without the tools of that name.
    [[nodiscard]] ToolSet without(std::string_view name) const;

    // The built-ins and then these tools, built on first call. Throws
    // ToolNameConflictError ("user tool '<name>' shadows a built-in system tool") on
    // every call when two tools share a name.
    [[nodiscard]] const ToolTable& table() const;
    // tools_to_schemas(table()) as one shared list (its wire encoding is made once).
    [[nodiscard]] const llm::ToolList& schemas() const;

private:
    struct State;
    static std::shared_ptr<State> empty_state();
    std::shared_ptr<State> state_;
};

}  // namespace rath::tool
