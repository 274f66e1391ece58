#pragma once
// rath::mcp::Client: one MCP session with one server over any Transport (stdio,
// Streamable HTTP). It runs the lifecycle (initialize with capability negotiation and
// revision fallback, notifications/initialized, ping), keeps the requests in flight by
// id with a deadline each, sends notifications/cancelled when a request times out or
// its caller is cancelled, surfaces progress and logging notifications as events,
// answers the server's own requests (ping, roots/list, sampling/createMessage and
// elicitation/create, each only when configured), and lists and calls tools.
//
// Thread safety: every member function may be called from any thread and any
// coroutine at once; the session's state lives on a strand of the executor that called
// async_connect. Event and progress callbacks run on that strand: they must not block
// (hand long work to the runtime) and must not call back into the client
// synchronously.
// Cancellation: cancelling a coroutine awaiting a request sends notifications/cancelled
// for it (except initialize, which the spec forbids cancelling) and ends the await with
// boost::system::system_error(operation_aborted); the session stays usable.
// Errors (rath/mcp/error.hpp): McpRemoteError for a JSON-RPC error answer,
// McpTimeoutError when a deadline passes, McpConnectionError when the connection is
// gone (every request in flight fails with it at once, with the transport's reason),
// McpProtocolError for an unsupported revision or a result of the wrong shape.
#include <rath/mcp/error.hpp>
#include <rath/mcp/transport.hpp>
#include <rath/mcp/types.hpp>
#include <rath/version.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rath::mcp {

// notifications/progress for a request of ours (basic/utilities/progress.mdx).
struct ProgressEvent {
    std::string method;                  // the request it belongs to ("tools/call")
    std::string tool;                    // tools/call: the tool's name
    double progress = 0;
    std::optional<double> total;
    std::optional<std::string> message;
};
// notifications/message (server/utilities/logging.mdx).
struct LogEvent {
    std::string level;                   // debug, info, notice, warning, error, critical, alert, emergency
    std::optional<std::string> logger;
    boost::json::value data;
};
// notifications/tools/list_changed: the next async_list_tools asks the server again.
struct ToolsChangedEvent {};
// Any other notification (resources/updated, ...), as sent.
struct NotificationEvent {
    std::string method;
    boost::json::value params;
};
// Something the server sent that the client could not use: not JSON-RPC, an answer to
// an id it never sent (or already gave up on). The session goes on.
struct StrayMessageEvent {
    std::string reason;
};
// The connection ended (the client was closed, the server exited, the transport failed).
struct DisconnectedEvent {
    std::string reason;
};
using ClientEvent = std::variant<ProgressEvent, LogEvent, ToolsChangedEvent, NotificationEvent, StrayMessageEvent,
                                 DisconnectedEvent>;

using EventHandler = std::function<void(const ClientEvent&)>;
// Answers sampling/createMessage with a CreateMessageResult object
// ({"role":"assistant","content":{...},"model":...,"stopReason":...}); throwing refuses
// the request (the server gets a JSON-RPC error with the exception's text).
using SamplingHandler = std::function<boost::asio::awaitable<boost::json::object>(SamplingRequest)>;
// Answers elicitation/create. The client fills schema defaults into an accepted
// answer's content for properties the handler left out.
using ElicitationHandler = std::function<boost::asio::awaitable<ElicitationResult>(ElicitationRequest)>;

struct ClientOptions {
    Implementation client_info{"rath", std::string(rath::version()), std::nullopt};
    // Offered in order at initialize: the next one after a refusal (basic/lifecycle.mdx).
    std::vector<std::string> protocol_versions = requested_protocol_versions();
    std::chrono::milliseconds request_timeout{60'000};   // every request unless the call sets one
    EventHandler on_event{};
    // Declared capabilities follow what is set: roots, sampling, elicitation.
    std::optional<std::vector<Root>> roots{};
    SamplingHandler sampling{};
    ElicitationHandler elicitation{};
};

struct CallOptions {
    std::optional<std::chrono::milliseconds> timeout{};  // default: ClientOptions::request_timeout
    // Progress of this request. When set, the request carries a progressToken.
    std::function<void(const ProgressEvent&)> on_progress{};
    // With on_progress: each progress notification restarts the timeout, up to
    // max_timeout after the request was sent (default: ten times the timeout).
    bool progress_extends_timeout = true;
    std::optional<std::chrono::milliseconds> max_timeout{};
    // The W3C trace context of the caller (rath/session/trace_context.hpp): sent as
    // params._meta.traceparent (the field MCP tracing proposals use), and by the
    // Streamable HTTP transport also as the request's traceparent header. A value that
    // is not a valid traceparent is not sent; params that are an array get none.
    std::optional<std::string> traceparent{};
    // Log messages (notifications/message) that arrive while this request is in flight.
    // MCP ties a log message to no request, so one goes here only while this is the one
    // request in flight that set on_log (calls of other sessions must not see each
    // other's logs); with several, it reaches only ClientOptions::on_event and the log.
    std::function<void(const LogEvent&)> on_log{};
};

class Client {
public:
    explicit Client(std::unique_ptr<Transport> transport, ClientOptions options = {});
    // Closes the session in the background if async_close was not awaited.
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // Starts the transport and runs initialize; the session is usable afterwards.
    // Throws TransportError/McpConnectionError when the server cannot be reached or
    // exits, McpProtocolError when no revision is agreed, McpTimeoutError.
    [[nodiscard]] boost::asio::awaitable<InitializeResult> async_connect();

    // Every tool, following nextCursor to the end; cached until list_changed or refresh.
    [[nodiscard]] boost::asio::awaitable<std::vector<ToolInfo>> async_list_tools(bool refresh = false);
    // One page of tools/list.
    [[nodiscard]] boost::asio::awaitable<ToolsPage> async_list_tools_page(std::optional<std::string> cursor,
                                                                         CallOptions options = {});
    // tools/call. A tool that reports a failure is a result with is_error, not a throw.
    [[nodiscard]] boost::asio::awaitable<CallToolResult> async_call_tool(std::string name, boost::json::object arguments,
                                                                         CallOptions options = {});
    [[nodiscard]] boost::asio::awaitable<void> async_ping(CallOptions options = {});
    // Any request: the result object as sent.
    [[nodiscard]] boost::asio::awaitable<boost::json::value> async_request(std::string method,
                                                                           std::optional<boost::json::value> params,
                                                                           CallOptions options = {});
    [[nodiscard]] boost::asio::awaitable<void> async_notify(std::string method,
                                                            std::optional<boost::json::value> params);

    // Fails every request in flight with McpConnectionError and closes the transport.
    // Idempotent; never throws.
    [[nodiscard]] boost::asio::awaitable<void> async_close();

    // Whether the session is initialized and its connection is up.
    [[nodiscard]] bool connected() const noexcept;
    // The initialize answer (unset before async_connect succeeded).
    [[nodiscard]] std::optional<InitializeResult> server() const;
    [[nodiscard]] std::string describe() const;
    // Requests in flight (tests, diagnostics).
    [[nodiscard]] std::size_t pending_requests() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace rath::mcp
