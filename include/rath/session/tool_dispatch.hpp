#pragma once
// The "inside a tool dispatch" marker (session.md §1.7, §2.8). Whoever runs a tool
// body (the agent loop, any executor) holds a ToolDispatchScope on the thread that
// runs it. While it is held, reading a pending session returns the transcript as it
// grows instead of waiting for the loop the tool itself belongs to (which would
// deadlock).
namespace rath {

// Depth of ToolDispatchScope nesting on the calling thread (0 = not in a tool).
int tool_dispatch_depth() noexcept;

class ToolDispatchScope {
public:
    ToolDispatchScope() noexcept;
    ~ToolDispatchScope();
    ToolDispatchScope(const ToolDispatchScope&) = delete;
    ToolDispatchScope& operator=(const ToolDispatchScope&) = delete;
};

}  // namespace rath
