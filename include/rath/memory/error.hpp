#pragma once
// Memory errors (memory_flow.md §1.10): contract violations are thrown; data-plane
// problems are ExecutionFailure values (result.hpp). Every class is copyable and keeps
// its fields readable after a catch.
#include <rath/error.hpp>

#include <string>
#include <vector>

namespace rath::memory {

class MemoryBackendError : public rath::Error {
public:
    using rath::Error::Error;
};

// "memory backend 'local' does not support op 'MemoryOpFind'"
class UnsupportedMemoryOp : public MemoryBackendError {
public:
    UnsupportedMemoryOp(std::string op_type, std::string backend_name);
    [[nodiscard]] const std::string& op_type() const noexcept { return op_type_; }
    [[nodiscard]] const std::string& backend_name() const noexcept { return backend_name_; }

private:
    std::string op_type_, backend_name_;
};

// "memory store 'h1' is already closed"
class MemoryStoreClosed : public MemoryBackendError {
public:
    explicit MemoryStoreClosed(std::string handle);
    [[nodiscard]] const std::string& handle() const noexcept { return handle_; }

private:
    std::string handle_;
};

// "memory backend 'x' is not registered; available backends: ['a', 'b']"
class MemoryBackendNotFound : public MemoryBackendError {
public:
    MemoryBackendNotFound(std::string name, std::vector<std::string> available);
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const std::vector<std::string>& available() const noexcept { return available_; }

private:
    std::string name_;
    std::vector<std::string> available_;
};

// "memory uri 'memory://x' not found" (defined for third-party backends; the local
// backend returns a not_found failure instead).
class MemoryNotFound : public MemoryBackendError {
public:
    explicit MemoryNotFound(std::string uri);
    [[nodiscard]] const std::string& uri() const noexcept { return uri_; }

private:
    std::string uri_;
};

// "memory uri 'memory://x' write conflict"
class MemoryConflict : public MemoryBackendError {
public:
    explicit MemoryConflict(std::string uri);
    [[nodiscard]] const std::string& uri() const noexcept { return uri_; }

private:
    std::string uri_;
};

}  // namespace rath::memory
