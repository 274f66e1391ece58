#pragma once
// Backend errors (backend_tools.md §1.6). Most runtime faults are not thrown: they
// become a ToolExecutionFailure value (result.hpp).
#include <rath/error.hpp>

#include <string>
#include <vector>

namespace rath::backend {

class BackendError : public rath::Error {
public:
    using rath::Error::Error;
};

// "backend '<b>' does not support backend tool payload '<TypeName>'"
class UnsupportedBackendTool : public BackendError {
public:
    UnsupportedBackendTool(std::string payload_type, std::string backend_name);
    const std::string& payload_type() const noexcept { return payload_type_; }
    const std::string& backend_name() const noexcept { return backend_name_; }

private:
    std::string payload_type_, backend_name_;
};

// "backend sandbox '<handle>' is already closed"
class BackendSandboxClosed : public BackendError {
public:
    explicit BackendSandboxClosed(std::string handle);
    const std::string& handle() const noexcept { return handle_; }

private:
    std::string handle_;
};

// "backend '<name>' is not registered; available backends: ['a', 'b']"
class BackendNotFound : public BackendError {
public:
    BackendNotFound(std::string name, std::vector<std::string> available);
    const std::string& name() const noexcept { return name_; }
    const std::vector<std::string>& available() const noexcept { return available_; }

private:
    std::string name_;
    std::vector<std::string> available_;
};

}  // namespace rath::backend
