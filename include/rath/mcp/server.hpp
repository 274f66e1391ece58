#pragma once
// rath::mcp::Server: an MCP server (revisions 2025-11-25 and 2025-06-18) that serves
// rath tools, agents and workflows, and their sessions' transcripts, to any MCP client.
//
// Two objects:
//  * Server holds what is served (tools, resources, resource templates, prompts) and is
//    shared by every connection. Register everything before the first session opens.
//  * ServerSession is one MCP session: the protocol state machine of one client
//    (lifecycle and version negotiation, ping, tools, resources, prompts, completion,
//    logging level, progress, cancellation, server-to-client requests). It takes
//    received message texts and hands every outgoing message to a sink; it owns no
//    socket, so the same logic serves stdio (server_stdio.hpp), Streamable HTTP
//    (server_http.hpp) and the tests, which feed it texts.
//
// Specification sections (basic/lifecycle.mdx, basic/utilities/{ping,cancellation,
// progress}.mdx, server/{tools,resources,prompts}.mdx, server/utilities/{logging,
// completion,pagination}.mdx of 2025-11-25):
//  * initialize: the server answers with the client's protocolVersion when it supports
//    it, else with its latest (2025-11-25); requests other than ping before initialize
//    get invalid_request.
//  * An unknown tool, prompt or bad cursor is a JSON-RPC invalid_params error; a tool
//    that fails (throws, rejects its arguments, or is a rath tool whose dispatch failed)
//    answers a result with isError: true, so the model sees the failure.
//  * notifications/cancelled for a running request cancels its handler (the awaiting
//    coroutine's cancellation slot, terminal) and no response is sent for it.
//  * Progress notifications go out only when the request carried _meta.progressToken;
//    log notifications only at or above the level set by logging/setLevel (default
//    info).
//
// Thread safety: Server registration is not synchronized (configure, then serve).
// Every ServerSession member may be called from any thread at once. The sink is called
// from the thread that produced the message (receive()'s caller or a runtime thread),
// never while a lock of the session is held, and may be called concurrently with
// itself: it must be thread-safe. Messages belonging to one request reach the sink in
// the order they were produced (progress before its response).
// Errors: receive() never throws on bad input (it answers with JSON-RPC errors);
// registration throws std::invalid_argument for a duplicate name or uri.
#include <rath/mcp/error.hpp>
#include <rath/mcp/jsonrpc.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath {
class Session;
}
namespace rath::async {
class Runtime;
}
namespace rath::flow {
class Workflow;
}

namespace rath::mcp {

// The revisions this server negotiates, newest first.
inline constexpr std::string_view server_protocol_versions[] = {"2025-11-25", "2025-06-18"};
// Revisions a client may name in the MCP-Protocol-Version header of a Streamable HTTP
// request: the negotiated ones plus the older ones an SDK client sends by default.
[[nodiscard]] bool known_protocol_version(std::string_view version) noexcept;

// The syslog levels of server/utilities/logging.mdx, in increasing severity.
enum class McpLogLevel { debug, info, notice, warning, error, critical, alert, emergency };
[[nodiscard]] std::string_view to_string(McpLogLevel level) noexcept;
[[nodiscard]] std::optional<McpLogLevel> parse_log_level(std::string_view text) noexcept;

// Handlers answer with a JSON-RPC error by throwing McpError(code, message, data)
// (rath/mcp/error.hpp), e.g. invalid_params from a prompt that lacks an argument. Any
// other exception from a resource or prompt handler answers internal_error; from a tool
// handler, an isError result.

class ServerSession;

// What a handler gets for the request it serves: progress, logging and requests to the
// client, all related to that request (Streamable HTTP sends them on its stream).
// Valid while the handler runs; usable from the handler's coroutine only.
class CallContext {
public:
    CallContext(std::shared_ptr<ServerSession> session, jsonrpc::Id request_id,
                std::optional<boost::json::value> progress_token)
        : session_(std::move(session)), id_(std::move(request_id)), progress_token_(std::move(progress_token)) {}

    [[nodiscard]] const jsonrpc::Id& request_id() const noexcept { return id_; }
    [[nodiscard]] const std::optional<boost::json::value>& progress_token() const noexcept { return progress_token_; }
    [[nodiscard]] ServerSession& session() const noexcept { return *session_; }

    // notifications/progress for this request; a no-op without a progress token.
    void progress(double progress, std::optional<double> total = std::nullopt,
                  std::optional<std::string> message = std::nullopt) const;
    // notifications/message, when `level` is at or above the session's level.
    void log(McpLogLevel level, boost::json::value data, std::optional<std::string> logger = std::nullopt) const;
    // A request to the client (sampling/createMessage, elicitation/create, roots/list)
    // and its result. Throws McpError with the client's error object, and
    // TransportClosed when the session closes first. Cancellable through the awaiting
    // coroutine's slot.
    [[nodiscard]] boost::asio::awaitable<boost::json::value> async_request(std::string method,
                                                                           boost::json::value params) const;
    // Ends the Streamable HTTP SSE stream carrying this request now, without cancelling
    // it (2025-11-25 "polling", SEP-1699): a long call need not hold a connection; the
    // client reconnects with Last-Event-ID after the stream's `retry` delay and gets
    // the rest. Only for clients of 2025-11-25 (they got a priming event to resume
    // from); otherwise, and over stdio, a no-op.
    void close_stream() const;

private:
    std::shared_ptr<ServerSession> session_;
    jsonrpc::Id id_;
    std::optional<boost::json::value> progress_token_;
};

// The session ended (closed by the transport) before the client answered.
class SessionClosed : public rath::Error {
public:
    using rath::Error::Error;
};

// ---- what a server serves ----

// An MCP tool in the protocol's own terms: the handler returns a CallToolResult object
// ({"content": [...], "structuredContent"?, "isError"?}). Throwing fails the call
// with an isError result carrying the message (McpError answers a JSON-RPC error).
struct ToolDefinition {
    std::string name;
    std::optional<std::string> title{};
    std::optional<std::string> description{};
    boost::json::object input_schema{{"type", "object"}};  // sent as is (JSON Schema 2020-12)
    std::optional<boost::json::object> output_schema{};
    std::optional<boost::json::object> annotations{};
    std::function<boost::asio::awaitable<boost::json::object>(boost::json::object arguments, CallContext& ctx)>
        handler;
};

struct ResourceDefinition {
    std::string uri;
    std::string name;
    std::optional<std::string> title{};
    std::optional<std::string> description{};
    std::optional<std::string> mime_type{};
    // The ReadResourceResult "contents" array for this uri.
    std::function<boost::asio::awaitable<boost::json::array>(std::string uri)> read;
};

// A parameterized resource (RFC 6570 level 1: "{name}" expansions of one path segment
// or part of one). resources/read of a matching uri calls `read` with the variables.
struct ResourceTemplateDefinition {
    std::string uri_template;
    std::string name;
    std::optional<std::string> title{};
    std::optional<std::string> description{};
    std::optional<std::string> mime_type{};
    std::function<boost::asio::awaitable<boost::json::array>(std::string uri, boost::json::object variables)> read;
};

struct PromptArgument {
    std::string name;
    std::optional<std::string> description{};
    bool required = false;
};

struct PromptDefinition {
    std::string name;
    std::optional<std::string> title{};
    std::optional<std::string> description{};
    std::vector<PromptArgument> arguments{};
    // The GetPromptResult "messages" array. Missing required arguments are rejected
    // (invalid_params) before it runs.
    std::function<boost::asio::awaitable<boost::json::array>(boost::json::object arguments)> get;
};

// A transcript kept for resources/read: an agent or workflow tool's output session.
struct TranscriptEntry {
    std::string uri;   // rath://sessions/<id>
    std::string name;  // "<tool> session <id>"
    std::string text;  // JSONL: header, one record per row, trailer (session.md §5.2)
};

struct ServerOptions {
    std::string name = "rath";
    std::string version{};  // default: rath's version
    std::optional<std::string> title{};
    std::optional<std::string> instructions{};
    // Items per tools/list, resources/list, resources/templates/list and prompts/list
    // page (nextCursor when there are more).
    std::size_t page_size = 100;
    // Requests of one session running at once; one more is answered with a JSON-RPC
    // error (code -32000) at once, so a client cannot queue unbounded work.
    std::size_t max_in_flight = 1024;
    // How many finished agent/workflow transcripts stay readable as resources (oldest
    // dropped first).
    std::size_t max_transcripts = 256;
    // The sandbox backend each MCP session's rath Session targets, for tools that need
    // one (the built-ins); nullopt leaves the sessions without a target.
    std::optional<std::string> sandbox_backend = "local";
    std::optional<std::string> sandbox_working_dir{};
    // Where handlers run (default: the default runtime).
    async::Runtime* runtime = nullptr;
};

// One outgoing message. `related` is the request it belongs to (a progress or log
// notification of that request's handler, a request to the client made by it, or its
// response); `final` marks the response, after which nothing more is related to it.
// A final message with an empty text ends a cancelled request, which gets no response:
// a transport writes nothing for it. `close_stream` (empty text) asks the transport to
// end the SSE stream that carries `related` now; its later messages wait for the
// client's reconnection (CallContext::close_stream).
struct Outgoing {
    std::string text;
    std::optional<jsonrpc::Id> related{};
    bool final = false;
    bool close_stream = false;
};
using Sink = std::function<void(Outgoing)>;

class Server : public std::enable_shared_from_this<Server> {
public:
    explicit Server(ServerOptions options = {});
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void add_tool(ToolDefinition tool);
    // A rath tool: name, description and its parameters schema as inputSchema (a typed
    // tool keeps its derived schema); the call goes through tool::async_dispatch_flow_tool
    // with the MCP session's rath Session, and the tool-result body comes back as one
    // text part (plus structuredContent when it is a JSON object); a failure is isError.
    // What the tool reports through its session while it runs (rath/tool/tool_event.hpp)
    // goes to the client as notifications/progress (when the request has a progress
    // token) and notifications/message (at or above the session's log level).
    void add_tool(tool::FlowToolPtr tool);
    // A whole agent or workflow as a tool taking {"message": string}: it runs on a new
    // user session, answers its final text plus the transcript as an embedded resource
    // (rath://sessions/<id>, application/x-ndjson), and keeps the transcript readable
    // through resources/list and resources/read (every open session is sent
    // notifications/resources/list_changed). Progress (when asked for) reports the
    // start and the end of the run. notifications/cancelled cancels the run itself (the
    // loop runs in the call's coroutine); a cancelled or failed run keeps no transcript.
    void add_workflow(std::string name, std::string description, std::shared_ptr<flow::Workflow> workflow);
    void add_resource(ResourceDefinition resource);
    void add_resource_template(ResourceTemplateDefinition resource_template);
    void add_prompt(PromptDefinition prompt);

    // A new MCP session whose outgoing messages go to `sink`.
    [[nodiscard]] std::shared_ptr<ServerSession> open_session(Sink sink);

    [[nodiscard]] const ServerOptions& options() const noexcept;
    [[nodiscard]] std::vector<std::string> tool_names() const;
    // The transcripts kept, oldest first.
    [[nodiscard]] std::vector<TranscriptEntry> transcripts() const;

private:
    friend class ServerSession;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class ServerSession : public std::enable_shared_from_this<ServerSession> {
public:
    ~ServerSession();
    ServerSession(const ServerSession&) = delete;
    ServerSession& operator=(const ServerSession&) = delete;

    // One received text (a message or a batch). Requests start their handlers on the
    // runtime and return at once; their responses reach the sink later.
    void receive(std::string_view text);
    // The same for messages already parsed (the HTTP transport parses to route).
    void receive(jsonrpc::Parsed parsed);

    // Cancels every running handler, fails the pending requests to the client
    // (SessionClosed), and sends nothing more. Idempotent.
    void close();
    [[nodiscard]] bool closed() const;

    // Server-initiated messages outside any request (the GET stream in HTTP).
    void notify(std::string method, std::optional<boost::json::value> params = std::nullopt);
    void log(McpLogLevel level, boost::json::value data, std::optional<std::string> logger = std::nullopt);

    [[nodiscard]] bool initialized() const;           // initialize answered
    [[nodiscard]] std::string protocol_version() const;  // "" before initialize
    [[nodiscard]] boost::json::object client_capabilities() const;
    [[nodiscard]] McpLogLevel log_level() const;
    // Requests received and not yet answered (cancelled ones excluded).
    [[nodiscard]] std::size_t in_flight() const;
    [[nodiscard]] bool subscribed(std::string_view uri) const;
    // The rath Session this MCP session's rath tools run with (ServerOptions's sandbox).
    [[nodiscard]] Session rath_session() const;

    // What CallContext uses.
    void send_related(const jsonrpc::Id& related, jsonrpc::Message message);
    void close_stream(const jsonrpc::Id& related);
    [[nodiscard]] boost::asio::awaitable<boost::json::value> async_request(const jsonrpc::Id& related,
                                                                           std::string method,
                                                                           boost::json::value params);

private:
    friend class Server;
    struct Impl;
    ServerSession(std::shared_ptr<Server> server, Sink sink);
    void handle_request(jsonrpc::Request req);
    void handle_notification(jsonrpc::Notification n);
    void handle_answer(const jsonrpc::Id& id, boost::json::value result, const jsonrpc::ErrorObject* error);
    void initialize(jsonrpc::Request req);
    static boost::asio::awaitable<void> run_request(std::shared_ptr<ServerSession> self, jsonrpc::Request req);
    boost::asio::awaitable<boost::json::value> dispatch(const jsonrpc::Request& req);
    std::optional<boost::json::value> answer_now(const jsonrpc::Request& req);
    boost::asio::awaitable<boost::json::value> call_tool(const jsonrpc::Request& req);
    boost::asio::awaitable<boost::json::value> read_resource(const jsonrpc::Request& req);
    boost::asio::awaitable<boost::json::value> get_prompt(const jsonrpc::Request& req);
    bool cancelled(const jsonrpc::Id& id) const;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rath::mcp
