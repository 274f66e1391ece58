#pragma once
// What the HTTP-based clients share: URL joining, transport options pulled out of
// extra_create_args, HTTP error -> typed ProviderError mapping, key scrubbing, the
// config fallback tier and the retry settings of a provider.
#include <rath/config/store.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/retry.hpp>
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

// request.model -> provider.model -> $<default_model_env> -> the config tier of `kind`;
// the environment and config are only read when neither model is set. Throws
// ProviderConfigError when all are empty.
std::string resolve_model(const ChatRequest& request, const Provider& provider, const char* default_model_env,
                          std::string_view kind);

// The client's constant headers as one shared block; extra_headers from the request's
// extra args override them, so such a request gets its own header list.
void set_headers(net::HttpRequest& req, const std::shared_ptr<const net::HeaderBlock>& preset,
                 const TransportExtras& extras);

RetryOptions retry_options(std::optional<int> max_attempts, std::optional<double> base_seconds,
                           const ChatClientOptions& options);

std::shared_ptr<net::HttpClient> make_http(const ChatClientOptions& options);

// An awaitable that fails with `e` when awaited: lets a plain function that prepares a
// coroutine report a preparation error at the await, like any other failure.
template <class T>
boost::asio::awaitable<T> fail_later(std::exception_ptr e) {
    std::rethrow_exception(e);
    if constexpr (std::is_void_v<T>)
        co_return;  // unreachable; makes this a coroutine
    else
        co_return T{};
}

// Runs `start` (which prepares a request and returns the call's awaitable) now; an
// exception it throws is delivered when the result is awaited, like any other failure.
template <class T, class Start>
boost::asio::awaitable<T> start_or_fail(Start&& start) {
    try {
        return std::forward<Start>(start)();
    } catch (...) {
        return fail_later<T>(std::current_exception());
    }
}

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

// The whole-body call of every client: send `request` (owned here, re-sent on each
// attempt) under the retry policy and turn a 2xx response into `out` with `parse`.
// `provider`, `secret` and `retry` are borrowed from the client, which outlives the
// awaitable as `http` does (a parked request then holds no copy of the key); `out` is
// borrowed from the caller, so the frame a parked request keeps has no result slot.
// The retry loop is written out here rather than built on async_retry_with_backoff:
// one coroutine frame per request instead of four (retry, its std::function, the
// attempt lambda, the send), which is what a parked session holds.
template <class T>
boost::asio::awaitable<void> async_send_parsed_into(net::HttpClient& http, net::HttpRequest request,
                                                    std::string_view provider, std::string_view secret,
                                                    std::optional<double> timeout_seconds, const RetryOptions& retry,
                                                    T (*parse)(net::HttpResponse&), T& out) {
    const int attempts = retry.max_attempts < 1 ? 1 : retry.max_attempts;
    net::HttpResponse resp;
    for (int k = 1;; ++k) {
        std::exception_ptr err{};
        try {
            co_await start_send(http, request, timeout_seconds, resp);
            throw_if_error_status(provider, resp, secret);
            out = parse(resp);  // may take the body: the response is not read again
            co_return;
        } catch (...) {
            err = map_send_error(std::current_exception(), provider, secret);
        }
        std::optional<std::chrono::duration<double>> delay{};
        if (k < attempts) delay = retry_decision(retry, k, err);
        if (!delay) std::rethrow_exception(err);
        co_await retry_sleep(retry, *delay);
    }
}

// The same, returning the parsed value (callers that keep no result slot of their own).
template <class T>
boost::asio::awaitable<T> async_send_parsed(net::HttpClient& http, net::HttpRequest request, std::string_view provider,
                                            std::string_view secret, std::optional<double> timeout_seconds,
                                            const RetryOptions& retry, T (*parse)(net::HttpResponse&)) {
    T out{};
    co_await async_send_parsed_into<T>(http, std::move(request), provider, secret, timeout_seconds, retry, parse, out);
    co_return out;
}

// A stream exchange: bytes go to `on_body`; throws typed errors. Errors thrown
// after `delivered` became non-zero are marked non-retryable by the caller.
boost::asio::awaitable<void> async_send_stream(net::HttpClient& http, const net::HttpRequest& request,
                                               std::string_view provider, std::string_view secret,
                                               std::optional<double> timeout_seconds,
                                               const std::function<void(std::string_view)>& on_body);

}  // namespace rath::llm::detail
