#pragma once
// The MCP values the client core hands out (schema of revision 2025-11-25, read so
// that 2025-06-18 and older servers are understood too), decoded from the JSON the
// server sent. Plain values: copyable, no thread-safety concerns.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rath::mcp {

// The revisions rath requests, newest first: initialize offers the first and falls back
// to the next when the server refuses it (basic/lifecycle.mdx "Version Negotiation").
[[nodiscard]] const std::vector<std::string>& requested_protocol_versions();
// The revisions a server may answer with and rath accepts (every released revision:
// what the client reads is a superset of each of them).
[[nodiscard]] bool accepted_protocol_version(const std::string& version);

struct Implementation {
    std::string name;
    std::string version;
    std::optional<std::string> title;
};

struct InitializeResult {
    std::string protocol_version;
    boost::json::object capabilities;     // as the server sent them
    Implementation server_info;
    std::optional<std::string> instructions;
};

struct ToolInfo {
    std::string name;
    std::optional<std::string> title;
    std::optional<std::string> description;
    boost::json::object input_schema;     // {"type":"object","properties":{}} when absent
    std::optional<boost::json::object> output_schema;
    boost::json::object annotations;      // readOnlyHint, destructiveHint, ... ({} when absent)
    // Set when inputSchema is not a usable JSON Schema object: a call of this tool fails
    // with this text instead of reaching the server.
    std::optional<std::string> schema_error;
};

struct ToolsPage {
    std::vector<ToolInfo> tools;
    std::optional<std::string> next_cursor;
};

// One content block of a tool result (server/tools.mdx "Tool Result"): text, image,
// audio, resource (embedded) or resource_link. Fields not used by the type stay unset.
struct ContentBlock {
    std::string type;
    std::optional<std::string> text;       // text; resource with text contents
    std::optional<std::string> data;       // image/audio base64; resource blob base64
    std::optional<std::string> mime_type;
    std::optional<std::string> uri;        // resource, resource_link
    std::optional<std::string> name;       // resource_link
    std::optional<std::string> description;  // resource_link
    std::optional<std::vector<std::string>> audience;  // annotations.audience
    boost::json::value raw;                // the block as sent
};

struct CallToolResult {
    std::vector<ContentBlock> content;
    std::optional<boost::json::value> structured_content;
    bool is_error = false;                 // a missing isError is false
};

// What the server asked for in sampling/createMessage (client/sampling.mdx).
struct SamplingRequest {
    boost::json::object params;            // messages, systemPrompt, maxTokens, ...
};

// elicitation/create (client/elicitation.mdx): form mode asks for `requested_schema`.
struct ElicitationRequest {
    std::string message;
    std::string mode = "form";             // "form" or "url" (2025-11-25)
    boost::json::object requested_schema;  // form mode
    std::optional<std::string> url;        // url mode
};

struct ElicitationResult {
    std::string action = "decline";        // "accept", "decline" or "cancel"
    boost::json::object content;           // accept only; schema defaults are filled in
};

struct Root {
    std::string uri;                       // file:// URI
    std::optional<std::string> name;
};

}  // namespace rath::mcp
