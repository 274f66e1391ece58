#pragma once
// The MCP error family, client and server. All derive from McpError, a rath::Error.
#include <rath/error.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace rath::mcp {

// The root of the family, and a JSON-RPC error object: a code, a message and optional
// data. A server handler throws it to answer with that error (e.g. invalid_params); the
// client's errors below derive from it and carry internal_error (-32603) unless the
// server sent a code. One class for both sides: two definitions of one name would break
// the one-definition rule (the linker keeps one destructor for both).
class McpError : public rath::Error {
public:
    explicit McpError(const std::string& message) : McpError(-32603, message) {}
    McpError(std::int64_t code, const std::string& message, std::optional<boost::json::value> data = {})
        : rath::Error(message), code_(code), data_(std::move(data)) {}
    [[nodiscard]] std::int64_t code() const noexcept { return code_; }
    [[nodiscard]] const std::optional<boost::json::value>& data() const noexcept { return data_; }

private:
    std::int64_t code_;
    std::optional<boost::json::value> data_;
};

// The server answered a request with a JSON-RPC error object.
class McpRemoteError : public McpError {
public:
    using McpError::McpError;
};

// A request got no answer before its deadline (notifications/cancelled was sent).
class McpTimeoutError : public McpError {
public:
    using McpError::McpError;
};

// The connection to the server is gone or never came up (the server exited, the
// transport failed, the client was closed).
class McpConnectionError : public McpError {
public:
    using McpError::McpError;
};

// The server broke the protocol: an unsupported revision, a result of the wrong shape.
class McpProtocolError : public McpError {
public:
    using McpError::McpError;
};

}  // namespace rath::mcp
