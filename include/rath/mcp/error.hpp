#pragma once
// What the MCP client throws. All derive from McpError, a rath::Error.
#include <rath/error.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace rath::mcp {

class McpError : public rath::Error {
public:
    using rath::Error::Error;
};

// The server answered a request with a JSON-RPC error object.
class McpRemoteError : public McpError {
public:
    McpRemoteError(std::int64_t code, const std::string& message, std::optional<boost::json::value> data = {})
        : McpError(message), code_(code), data_(std::move(data)) {}
    [[nodiscard]] std::int64_t code() const noexcept { return code_; }
    [[nodiscard]] const std::optional<boost::json::value>& data() const noexcept { return data_; }

private:
    std::int64_t code_;
    std::optional<boost::json::value> data_;
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
