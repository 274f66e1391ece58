#pragma once
// The client side of MCP as a pure state machine (no I/O, no clock): it numbers the
// requests it writes, remembers which method each id was for, and classifies what the
// server sends (an answer to one of ours, a request of the server's, a notification,
// or something unusable), plus the decoders of the results the client reads.
// The async Client drives one of these on its strand; the fixture test replays
// recorded server output through it.
//
// Thread safety: none (one owner). Errors: the decoders throw McpProtocolError for a
// result of the wrong shape; receive() never throws on bad input.
#include <rath/mcp/jsonrpc.hpp>
#include <rath/mcp/types.hpp>

#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace rath::mcp::detail {

class ClientProtocol {
public:
    struct Outgoing {
        jsonrpc::Id id;
        std::string text;
    };
    // An answer to a request of ours: the result, or the error object.
    struct Reply {
        jsonrpc::Id id;
        std::string method;
        std::variant<boost::json::value, jsonrpc::ErrorObject> outcome;
    };
    struct Stray {
        std::string reason;
    };
    using Incoming = std::variant<Reply, jsonrpc::Request, jsonrpc::Notification, Stray>;

    // Ids are integers from 0 (as the reference SDKs number them). With
    // `progress_token`, params._meta.progressToken is the request's id
    // (basic/utilities/progress.mdx: a token unique among active requests).
    Outgoing request(std::string method, std::optional<boost::json::value> params, bool progress_token = false);
    [[nodiscard]] static std::string notification(std::string method, std::optional<boost::json::value> params);
    // Registers an id the peer's recording says we sent (fixture replay).
    void expect(jsonrpc::Id id, std::string method);
    // The request will not be waited for (deadline, cancellation): a late answer to it
    // is a Stray. Returns whether it was pending.
    bool forget(const jsonrpc::Id& id);
    [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }
    [[nodiscard]] std::vector<jsonrpc::Id> pending_ids() const;

    // Classifies one message text (a line, an SSE data payload).
    std::vector<Incoming> receive(std::string_view text);

private:
    std::int64_t next_id_ = 0;
    std::unordered_map<jsonrpc::Id, std::string> pending_;
};

// A short quote of peer text for messages (net::quote_peer_bytes).
std::string quote(std::string_view text);

[[nodiscard]] InitializeResult decode_initialize_result(const boost::json::value& result);
[[nodiscard]] ToolsPage decode_tools_page(const boost::json::value& result);
[[nodiscard]] CallToolResult decode_call_tool_result(const boost::json::value& result);
[[nodiscard]] ContentBlock decode_content_block(const boost::json::value& block);
// Why `schema` is not usable as a tool's inputSchema, or nullopt when it is (an object
// schema whose keywords have the types JSON Schema gives them).
[[nodiscard]] std::optional<std::string> input_schema_problem(const boost::json::value& schema);
// An accepted elicitation answer with the schema's defaults filled in where the handler
// left a property out (client/elicitation.mdx, 2025-11-25: primitive schemas may carry
// a "default").
[[nodiscard]] boost::json::object apply_schema_defaults(const boost::json::object& schema, boost::json::object content);

}  // namespace rath::mcp::detail
