#pragma once
// StreamableHttpTransport: the client side of the Streamable HTTP transport
// (2025-11-25 basic/transports, "Streamable HTTP") over rath's HttpClient.
//
// - Every message is a POST to the MCP endpoint with `Accept: application/json,
//   text/event-stream`. A request's answer may be one JSON body or an SSE stream that
//   carries server requests and notifications before the response; notifications and
//   responses expect 202.
// - The `MCP-Session-Id` the server assigns with the InitializeResult is sent on every
//   later request, and `MCP-Protocol-Version` once set_protocol_version was called.
// - After the session is initialized, a GET opens the stream for server-initiated
//   messages; 405 (or any refusal) means the server offers none, which is fine.
// - A stream that breaks or that the server closes before the response arrived is
//   resumed with a GET carrying `Last-Event-ID`, after the server's SSE `retry` delay
//   (options.default_retry when it sent none); the standalone GET stream is reopened
//   the same way.
// - A 404 on a request that carried a session id means the session ended: the transport
//   starts a new one (replays initialize without a session id, then
//   notifications/initialized) and sends the message again, once.
// - With an OAuthProvider, every request carries its Authorization field; a 401, or a
//   403 with error="insufficient_scope", runs the provider's flow and the request is
//   sent again (at most options.auth->options().max_authorizations flows per request).
// - async_close DELETEs the session (405 tolerated) and ends every stream.
//
// A request whose exchange fails (the server is unreachable, answers an error status,
// or its stream ends for good without the response) gets a JSON-RPC error response
// with code -32000 from the transport, so its caller fails at once with the reason
// instead of waiting for its deadline.
//
// Streams and timeouts: the HttpClient's read_timeout bounds the silence on a stream. An
// idle GET stream that hits it is simply reopened; a request's stream that hits it is
// resumed when the server gave event ids, else the request fails. Give the transport an
// HttpClient with a longer read_timeout for tools that run silently for minutes.
//
// Thread safety and cancellation: as rath/mcp/transport.hpp states for every
// transport. Background streams run on a strand of the executor that awaited
// async_start; async_close cancels them. Errors: TransportError from async_send of a
// notification or response that the server refused or could not be sent; OAuthError
// when authorization fails for such a message.
#include <rath/mcp/transport.hpp>
#include <rath/net/http.hpp>
#include <rath/net/http_client.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::mcp {

namespace oauth {
class OAuthProvider;
}  // namespace oauth

struct StreamableHttpClientOptions {
    std::string url;                          // the MCP endpoint, http:// or https://
    std::vector<net::HttpHeader> headers{};   // sent on every request (e.g. a static Authorization)
    std::shared_ptr<oauth::OAuthProvider> auth{};  // OAuth 2.1 for protected servers
    bool open_get_stream = true;              // listen for server-initiated messages
    // Reconnection delay until the server sends an SSE `retry` field.
    std::chrono::milliseconds default_retry{1'000};
    // Reconnection attempts in a row that bring no event before a stream is given up.
    int max_reconnects = 5;
    // One SSE line / event, and one JSON answer (the HttpClient's body cap applies too).
    std::size_t max_message_bytes = std::size_t{16} << 20;
    // The DELETE of async_close waits this long at most.
    std::chrono::milliseconds close_timeout{2'000};
};

class StreamableHttpTransport final : public Transport {
public:
    // Throws TransportError for a URL that is not absolute http(s).
    StreamableHttpTransport(net::HttpClient http, StreamableHttpClientOptions options);
    ~StreamableHttpTransport() override;

    [[nodiscard]] boost::asio::awaitable<void> async_start() override;
    [[nodiscard]] boost::asio::awaitable<void> async_send(std::string message) override;
    [[nodiscard]] boost::asio::awaitable<std::optional<std::string>> async_receive() override;
    [[nodiscard]] boost::asio::awaitable<void> async_close() override;
    void set_protocol_version(const std::string& version) override;
    [[nodiscard]] std::string close_reason() const override;
    [[nodiscard]] std::string describe() const override;

    // The session id the server assigned ("" when none), for tests and diagnostics.
    [[nodiscard]] std::string session_id() const;
    // Sessions started so far (1 after initialize; more after 404 re-initializations).
    [[nodiscard]] std::size_t sessions_started() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace rath::mcp
