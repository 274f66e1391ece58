#pragma once
// What the HTTP-based clients share: URL joining, transport options pulled out of
// extra_create_args, HTTP error -> typed ProviderError mapping, key scrubbing, the
// config fallback tier, and the shared HTTP client of the chat clients.
#include <rath/config/store.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/net/http_client.hpp>

#include <boost/json/object.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::llm::detail {

// extra_body / extra_headers / extra_query / timeout from extra_create_args.
struct TransportExtras {
    boost::json::object body{};  // merged into the request body
    std::vector<net::HttpHeader> headers{};
    std::vector<std::pair<std::string, std::string>> query{};
    std::optional<double> timeout_seconds{};
};
// Removes the four transport keys from `extras` and returns them.
TransportExtras take_transport_extras(boost::json::object& extras);

// base (trailing '/' dropped, query kept at the end) + path + extra query params.
std::string join_url(std::string_view base, std::string_view path,
                     const std::vector<std::pair<std::string, std::string>>& query = {});
std::string url_encode(std::string_view s);

// Replaces every occurrence of `secret` in `text` (secrets shorter than 4 chars are
// left alone, they would mangle ordinary words).
std::string scrub(std::string text, std::string_view secret);

// Error facts from a non-2xx response (OpenAI and Anthropic shapes, and non-JSON).
ProviderErrorInfo error_info_from_response(std::string_view provider, const net::HttpResponse& response);
// Throws the ProviderError subclass that matches the status.
[[noreturn]] void throw_status_error(ProviderErrorInfo info);
// Translates transport failures into ProviderConnectionError / ProviderTimeoutError.
[[noreturn]] void throw_transport_error(std::string_view provider, const std::exception& e, std::string_view secret);

// The chat-client config tier (§2.4); any config failure means "no tier".
std::optional<config::LlmProviderEntry> config_fallback(std::string_view kind);

// request.model -> provider.model -> the kind's model variable (config::provider_env) ->
// the config tier of `kind`; the environment and config are only read when neither model
// is set. Throws ProviderConfigError when all are empty.
std::string resolve_model(const ChatRequest& request, const Provider& provider, std::string_view kind);

// The client's constant headers as one shared block; extra_headers from the request's
// extra args override them, so such a request gets its own header list.
void set_headers(net::HttpRequest& req, const std::shared_ptr<const net::HeaderBlock>& preset,
                 const TransportExtras& extras);

std::shared_ptr<net::HttpClient> make_http(const ChatClientOptions& options);

// One attempt: the response, whatever its status, into `response`. Not a coroutine:
// without a timeout it is the HTTP client's own operation. `request` and `response`
// are borrowed.
boost::asio::awaitable<void> start_send(net::HttpClient& http, const net::HttpRequest& request,
                                        std::optional<double> timeout_seconds, net::HttpResponse& response);
// The typed error for a failed attempt: transport failures become ProviderConnectionError /
// ProviderTimeoutError (key scrubbed); anything else is returned unchanged.
std::exception_ptr map_send_error(std::exception_ptr e, std::string_view provider, std::string_view secret);
// A non-2xx answer becomes the typed provider error (key scrubbed from the message).
void throw_if_error_status(std::string_view provider, const net::HttpResponse& response, std::string_view secret);

// A stream exchange: bytes go to `on_body`; throws typed errors. Errors thrown
// after `delivered` became non-zero are marked non-retryable by the caller.
boost::asio::awaitable<void> async_send_stream(net::HttpClient& http, const net::HttpRequest& request,
                                               std::string_view provider, std::string_view secret,
                                               std::optional<double> timeout_seconds,
                                               const std::function<void(std::string_view)>& on_body);

}  // namespace rath::llm::detail
