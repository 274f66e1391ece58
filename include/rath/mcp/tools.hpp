#pragma once
// MCP servers as rath tools (backend_tools.md §7, with the changes): every tool
// of a server becomes a FlowToolCall any Agent can use. One persistent connection per
// server is shared by every session that calls its tools (OpenRath starts a process per
// call; that stays available as `per_call`). A server that died is started again on
// the next call, after a backoff when it keeps failing (0.2 s doubling up to 10 s by
// default: McpServerOptions::restart_backoff).
//
// Tool results become tool-result rows (§7.1, extended):
// - isError: the failure row {"ok":false,"error_kind":"mcp_tool_error","message":<text>,
//   "detail":"<server>/<tool>"};
// - no content: structuredContent if present, else {"ok":true};
// - only text blocks: {"text": <texts joined with "\n">};
// - other blocks: {"text": ... (when there is text), "content": [one summary per
//   non-text block]}: image/audio {"type","mimeType","bytes"} (the base64 data is left
//   out: a text model cannot use it and it would crowd out everything else), embedded
//   resources {"type","uri","mimeType","text"} or {"type","uri","mimeType","bytes"},
//   resource links {"type","uri","name","mimeType","description"}.
// Text beyond max_output_chars code points is cut and "...(truncated)" appended, as the
// built-in file read does.
//
// Tracing: a tool called for a session with a trace context (its traceparent lineage
// extra, rath/session/trace_context.hpp) sends it with the call (CallOptions::
// traceparent: params._meta.traceparent, and the traceparent header over Streamable
// HTTP). Every call through McpServer is counted in rath::mcp_call_stats().
// Events: in an agent run with LoopOptions::on_event, a call's notifications/progress
// and its server's notifications/message become the run's tool events
// (rath/tool/tool_event.hpp), tagged with the tool and call id. MCP ties a log message
// to no request: one counts as the call's only while the call is the one call of that
// server in flight that listens (CallOptions::on_log); the others reach
// ClientOptions::on_event and the rath.mcp log only, as every message does.
//
// Thread safety: McpServer and the tools may be used from any thread and any session at
// once. Cancellation: a cancelled tool call sends notifications/cancelled for its
// request and ends with operation_aborted, which the dispatcher passes on. Errors: see
// each function; inside the agent loop every failure of a call becomes a
// tool_execution_exception row naming the MCP error (McpTimeoutError: ..., ...).
#include <rath/mcp/client.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/mcp/stdio_transport.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::config {
class ConfigStore;
}

namespace rath::mcp {

struct McpServerOptions {
    std::string name;                       // the server's name in messages and resource keys
    StdioServerParams stdio{};              // how to start it (stdio)
    // Any other transport (Streamable HTTP): when set, used instead of `stdio`. Called
    // for every (re)connection.
    std::function<std::unique_ptr<Transport>()> transport{};
    ClientOptions client{};                 // events, sampling, elicitation, roots, deadlines
    // Each tools/call; every progress notification of the call restarts it, up to ten
    // times this value in all.
    std::chrono::milliseconds call_timeout{60'000};
    // Calls of this server's tools within one session: true runs them at once (resource
    // key ("mcp", server, tool, arguments): only identical calls wait for each other);
    // false runs them one at a time, in call order, across all the server's tools.
    bool parallel = true;
    // Overrides the key of a parallel call (same key: in call order).
    std::function<tool::ResourceKey(const std::string& tool, const boost::json::object& arguments)> resource_key{};
    // A server that died is started again on the next call. When it keeps failing (it
    // lived less than 10 s, or did not start) that start first waits restart_backoff,
    // doubled for each further failure up to restart_backoff_max; a call answered after
    // 10 s of life resets it.
    std::chrono::milliseconds restart_backoff{200};
    std::chrono::milliseconds restart_backoff_max{10'000};
    bool per_call = false;                  // a new connection (process) for every list and call
    std::string tool_prefix{};              // prepended to every tool name ("" = the server's names)
    std::size_t max_output_chars = 40'000;  // below the loop's 48,000-character inline cap
    // FlowToolCall::idempotent of every tool of the server. Unset: each tool's own
    // annotations decide, idempotent when it declares readOnlyHint or idempotentHint
    // true, else not (a tool without annotations is assumed to have side effects).
    std::optional<bool> idempotent{};
};

// One server and its shared connection.
class McpServer : public std::enable_shared_from_this<McpServer> {
public:
    // Does not connect yet. Throws TransportError when the options name no command and
    // no transport.
    [[nodiscard]] static std::shared_ptr<McpServer> create(McpServerOptions options);
    ~McpServer();

    [[nodiscard]] const McpServerOptions& options() const noexcept { return options_; }
    // Connects when needed (or starts a new process per call with per_call).
    [[nodiscard]] boost::asio::awaitable<std::vector<ToolInfo>> async_list_tools();
    // Counted in rath::mcp_call_stats() (rath/ops_stats.hpp) under the server's name.
    [[nodiscard]] boost::asio::awaitable<CallToolResult> async_call_tool(std::string name, boost::json::object arguments,
                                                                         CallOptions options);
    // Closes the shared connection; a later call connects again.
    [[nodiscard]] boost::asio::awaitable<void> async_close();
    // Connections made so far (the first and every restart).
    [[nodiscard]] std::size_t connections() const;

    struct Impl;

private:
    explicit McpServer(McpServerOptions options);
    [[nodiscard]] boost::asio::awaitable<CallToolResult> call_tool(std::string name, boost::json::object arguments,
                                                                   CallOptions options);
    McpServerOptions options_;
    std::shared_ptr<Impl> impl_;
};

// The JSON body of a successful (not isError) tools/call result, as described above.
[[nodiscard]] boost::json::value tool_result_json(const CallToolResult& result, std::size_t max_output_chars);
// What a FlowToolCall returns for a result: the failure row for isError, else the above.
[[nodiscard]] tool::ToolReturn tool_result_row(const CallToolResult& result, const std::string& server,
                                               const std::string& tool, std::size_t max_output_chars);

// Lists the server's tools (every page) and wraps each one. A tool whose inputSchema is
// not a usable JSON Schema is still listed (with an empty object schema), and calling
// it fails with a message naming the problem. Throws what connecting throws
// (TransportError, McpError).
[[nodiscard]] boost::asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_server(
    std::shared_ptr<McpServer> server);
[[nodiscard]] boost::asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_server(McpServerOptions options);
// Blocking forms (on the default runtime; async::DeadlockError on a runtime thread).
[[nodiscard]] std::vector<tool::FlowToolPtr> mcp_tools_from_server(McpServerOptions options);
// OpenRath's signature: command[0] with command[1..] (or `args` when `command` is one
// element and args are given), env on top of the SDK's environment allowlist.
[[nodiscard]] std::vector<tool::FlowToolPtr> mcp_tools_from_server(std::vector<std::string> command,
                                                                   std::vector<std::string> args = {},
                                                                   std::map<std::string, std::string> env = {});

// The server options for a named config entry: `mcp.servers.<name>` (OpenRath's shape:
// {"command": [argv...], "env": {...}}) or `mcpServers.<name>` (the common shape:
// {"command": "npx", "args": [...], "env": {...}, "cwd": "..."}, or a Streamable HTTP
// server: {"url": "https://host/mcp", "headers": {"Authorization": "..."}, "type":
// "http"}; "type": "sse", the older HTTP+SSE transport, is refused), either with the
// optional rath keys "timeout" (seconds per call), "parallel", "per_call",
// "tool_prefix" and "idempotent" (a bool: McpServerOptions::idempotent); a url entry may
// also carry "oauth" (see mcp_oauth_config). With no name, the single entry of mcp.default_enabled. Throws
// config::ConfigLookupError with OpenRath's messages (§7.1): no name and an empty
// default_enabled, more than one, or an unknown server; config::ConfigError for a
// malformed entry.
[[nodiscard]] McpServerOptions mcp_server_options_from_config(std::optional<std::string> name = std::nullopt,
                                                              std::shared_ptr<config::ConfigStore> store = nullptr);
// OAuth 2.1 for a config url entry (mcpServers.<name>): its "oauth" key, either true
// (the authorization code grant with PKCE, the client registered dynamically) or
//   {"grant": "authorization_code" | "client_credentials", "client_id": string,
//    "client_secret": string, "token_endpoint_auth_method": string, "scope": string,
//    "redirect_uri": string, "client_name": string, "client_metadata_url": string}
// (all optional but client_id for client_credentials). Tokens and the registered client
// are kept in "mcp-oauth/" beside the config file, files of mode 0600. A connection made
// from the config (mcp_server_options_from_config) uses and refreshes the stored tokens
// and runs a client credentials grant itself; the authorization code grant needs a
// person at a browser, so such a connection without usable tokens fails with OAuthError
// "MCP server '<name>' needs authorization: run `rath mcp login <name>`", and `rath mcp
// login` runs that grant (it sets redirect_handler, left empty here). nullopt for an entry
// without "oauth". Throws as mcp_server_options_from_config.
struct McpOAuthConfig {
    std::string server_url;      // the entry's url
    oauth::OAuthOptions options;  // token_dir set; redirect_handler empty
};
[[nodiscard]] std::optional<McpOAuthConfig> mcp_oauth_config(const std::string& name,
                                                             std::shared_ptr<config::ConfigStore> store = nullptr);

[[nodiscard]] std::vector<tool::FlowToolPtr> mcp_tools_from_config(std::optional<std::string> name = std::nullopt,
                                                                   std::shared_ptr<config::ConfigStore> store = nullptr);
[[nodiscard]] boost::asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_config(
    std::optional<std::string> name = std::nullopt, std::shared_ptr<config::ConfigStore> store = nullptr);

}  // namespace rath::mcp
