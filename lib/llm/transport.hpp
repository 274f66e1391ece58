#pragma once
// What the HTTP-based clients share: URL joining, transport options pulled out of
// extra_create_args, HTTP error -> typed ProviderError mapping, key scrubbing, the
// config fallback tier and the retry settings of a provider.
#include <rath/config/store.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/retry.hpp>
#include <rath/net/http.hpp>

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

RetryOptions retry_options(std::optional<int> max_attempts, std::optional<double> base_seconds,
                           const ChatClientOptions& options);

std::shared_ptr<net::HttpClient> make_http(const ChatClientOptions& options);

// An awaitable that fails with `e` when awaited: lets a plain function that prepares a
// coroutine report a preparation error at the await, like any other failure.
template <class T>
boost::asio::awaitable<T> fail_later(std::exception_ptr e) {
    std::rethrow_exception(e);
    co_return T{};  // unreachable; makes this a coroutine
}

// Sends one request, mapping transport failures and non-2xx statuses to typed errors.
// `request` is borrowed (callers keep it for retries): it must outlive the operation.
boost::asio::awaitable<net::HttpResponse> async_send(net::HttpClient& http, const net::HttpRequest& request,
                                                     std::string provider, std::string secret,
                                                     std::optional<double> timeout_seconds);

// The whole-body call of every client: send `request` (owned here, re-sent on each
// attempt) under the retry policy and turn a 2xx response into T with `parse`.
template <class T>
boost::asio::awaitable<T> async_send_parsed(net::HttpClient& http, net::HttpRequest request, std::string provider,
                                            std::string secret, std::optional<double> timeout_seconds,
                                            RetryOptions retry, T (*parse)(const net::HttpResponse&)) {
    co_return co_await async_retry_with_backoff<T>(
        [&]() -> boost::asio::awaitable<T> {
            auto resp = co_await async_send(http, request, provider, secret, timeout_seconds);
            co_return parse(resp);
        },
        std::move(retry));
}

// A stream exchange: bytes go to `on_body`; throws typed errors. Errors thrown
// after `delivered` became non-zero are marked non-retryable by the caller.
boost::asio::awaitable<void> async_send_stream(net::HttpClient& http, const net::HttpRequest& request, std::string provider,
                                               std::string secret, std::optional<double> timeout_seconds,
                                               std::function<void(std::string_view)> on_body);

}  // namespace rath::llm::detail
