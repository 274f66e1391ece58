#pragma once
// Errors raised by tools. A tool fault never escapes dispatch_flow_tool: it becomes
// the `tool_execution_exception` failure "<python_type>: <message>" (§6.7).
#include <rath/error.hpp>

#include <string>

namespace rath::tool {

class ToolError : public rath::Error {
public:
    explicit ToolError(const std::string& message, std::string python_type = "RuntimeError")
        : rath::Error(message), python_type_(std::move(python_type)) {}
    // The Python exception class the message corresponds to (KeyError, ValueError, ...).
    const std::string& python_type() const noexcept { return python_type_; }

private:
    std::string python_type_;
};

// Arguments that do not match the tool's schema or contract.
class ToolArgumentError : public ToolError {
public:
    using ToolError::ToolError;
};

// merge_tools_for_loop: "user tool '<name>' shadows a built-in system tool".
class ToolNameConflictError : public ToolError {
public:
    explicit ToolNameConflictError(const std::string& message) : ToolError(message, "ToolNameConflictError") {}
};

}  // namespace rath::tool
