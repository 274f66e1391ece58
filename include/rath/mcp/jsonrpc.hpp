#pragma once
// JSON-RPC 2.0 as a pure layer (no I/O), shared by the MCP client and server: the four
// message kinds, ids of both kinds, batches, error objects, and the standard error
// codes. Parsing goes through simdjson, building through Boost.JSON-compatible writers.
//
// MCP restricts JSON-RPC (basic/index.mdx "Messages", 2025-11-25): request ids are a
// string or an integer and never null, and an id is not reused within a session.
// Batches were part of revision 2025-03-26 only (removed in 2025-06-18); this layer
// parses and writes them so that a peer of that revision is understood, and leaves the
// choice of sending them to the caller.
//
// Thread safety: every function is pure and may be called from any thread at once.
// Nothing here throws except std::bad_alloc; malformed input is reported in the result.
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rath::mcp::jsonrpc {

inline constexpr std::string_view version = "2.0";

// JSON-RPC 2.0 §5.1 standard codes, and the ones MCP defines on top.
namespace error_code {
inline constexpr std::int64_t parse_error = -32700;
inline constexpr std::int64_t invalid_request = -32600;
inline constexpr std::int64_t method_not_found = -32601;
inline constexpr std::int64_t invalid_params = -32602;
inline constexpr std::int64_t internal_error = -32603;
// MCP: a resource that does not exist (server/resources.mdx "Error Handling").
inline constexpr std::int64_t resource_not_found = -32002;
// MCP 2025-11-25: URL-mode elicitation required (client/elicitation.mdx).
inline constexpr std::int64_t url_elicitation_required = -32042;
}  // namespace error_code

// A request id: an integer or a string (never null in MCP). std::hash<Id> is the
// standard library's hash of a variant, so ids key unordered maps directly.
using Id = std::variant<std::int64_t, std::string>;

// The id as JSON text would show it: 7 or "abc" (quotes included for strings).
[[nodiscard]] std::string id_text(const Id& id);
[[nodiscard]] boost::json::value id_to_json(const Id& id);

struct ErrorObject {
    std::int64_t code = error_code::internal_error;
    std::string message;
    std::optional<boost::json::value> data;  // absent when the peer sent none
    bool operator==(const ErrorObject&) const = default;
};

struct Request {
    Id id;
    std::string method;
    std::optional<boost::json::value> params;  // an object or an array when present
    bool operator==(const Request&) const = default;
};

struct Notification {
    std::string method;
    std::optional<boost::json::value> params;
    bool operator==(const Notification&) const = default;
};

// A successful response.
struct Result {
    Id id;
    boost::json::value result;
    bool operator==(const Result&) const = default;
};

// An error response; the id is absent when the peer could not tell which request failed
// (a parse error, an invalid request without a usable id).
struct ErrorResponse {
    std::optional<Id> id;
    ErrorObject error;
    bool operator==(const ErrorResponse&) const = default;
};

using Message = std::variant<Request, Notification, Result, ErrorResponse>;

// What one text (one stdio line, one HTTP body, one SSE data payload) held.
struct Parsed {
    bool batch = false;                   // the text was a JSON array
    std::vector<Message> messages;        // the well-formed messages, in order
    // One entry per element that is not a valid message (or one for the whole text when
    // it is not JSON): the error response the receiver would answer with (parse_error or
    // invalid_request; the id is kept when it could be read). A receiver that is a
    // client logs these; a server sends them back.
    std::vector<ErrorResponse> invalid;
};

// Parses one text. Unknown members are ignored. Never throws on bad input.
[[nodiscard]] Parsed parse(std::string_view text);

// Compact JSON text of one message (no trailing newline; strings escaped as Boost.JSON
// does, so no raw newline can appear in the output).
[[nodiscard]] std::string serialize(const Message& message);
// A JSON array of the messages (a batch); "[]" is never valid JSON-RPC, so an empty span
// gives an empty string.
[[nodiscard]] std::string serialize_batch(const std::vector<Message>& messages);
// The message as a Boost.JSON value.
[[nodiscard]] boost::json::value to_json(const Message& message);

// Convenience builders.
[[nodiscard]] ErrorResponse make_error(std::optional<Id> id, std::int64_t code, std::string message,
                                       std::optional<boost::json::value> data = {});

}  // namespace rath::mcp::jsonrpc
