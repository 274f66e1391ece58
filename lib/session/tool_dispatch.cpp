#include <rath/session/tool_dispatch.hpp>

namespace rath {

namespace {
thread_local int t_depth = 0;
}

int tool_dispatch_depth() noexcept { return t_depth; }
ToolDispatchScope::ToolDispatchScope() noexcept { ++t_depth; }
ToolDispatchScope::~ToolDispatchScope() { --t_depth; }

}  // namespace rath
