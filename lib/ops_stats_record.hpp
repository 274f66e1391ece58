#pragma once
// Private: where the MCP and memory layers count their operations (rath/ops_stats.hpp).
#include <chrono>
#include <string_view>

namespace rath::detail {

void record_mcp_call(std::string_view server, std::string_view outcome, std::chrono::steady_clock::duration d);
void record_memory_op(std::string_view op, std::string_view outcome, std::chrono::steady_clock::duration d);

}  // namespace rath::detail
