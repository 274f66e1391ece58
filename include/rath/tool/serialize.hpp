#pragma once
// How a tool's return value becomes the body of its tool-result row (backend_tools.md
// §6.4, session.md §2.5): the projection (a JSON value) and its encoded content.
#include <rath/tool/flow_tool.hpp>

#include <string>

namespace rath::tool {

inline constexpr std::size_t file_content_max_chars = 12000;
inline constexpr std::size_t file_entries_max = 500;
inline constexpr std::size_t inline_result_max_chars = 48000;
inline constexpr std::size_t inline_repr_max_chars = 47000;

struct ToolDispatchResult {
    ToolReturn raw;
    std::string content;             // what goes into the tool-result row
    boost::json::value projection;   // parsing `content` gives this back
    bool failed = false;             // raw is a ToolExecutionFailure
};

// The JSON body for a raw value (sandbox results decoded per §3.7; command output is
// never cut, a capped stream gets a truncation marker appended).
[[nodiscard]] boost::json::value project(const ToolReturn& raw);
// project + encode: sandbox results (and bools) ASCII-escaped, inline values UTF-8.
[[nodiscard]] ToolDispatchResult make_dispatch_result(ToolReturn raw);
// The failure value {"ok": false, "error_kind", "message"[, "detail"]}.
[[nodiscard]] backend::ToolExecutionFailure tool_failure(std::string kind, std::string message,
                                                         std::optional<std::string> detail = {});
// That failure's tool-result body (what make_dispatch_result gives for it): the one
// encoding of every error row, the loop's and the dispatcher's.
[[nodiscard]] std::string failure_content(std::string kind, std::string message,
                                          std::optional<std::string> detail = {});

}  // namespace rath::tool
