#pragma once
// One provider call over HTTP, whole body or streamed, under the retry policy: the one
// retry loop of the LLM layer (llm.md §6.1). Whole-body calls parse a 2xx response
// into the caller's slot; streamed calls feed the body through SSE framing and the
// provider's event decoder, forward every delta and fold them into the slot. Only the
// open phase of a stream is retried: once a delta reached the caller, a failure
// propagates with the partial response attached.
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/net/http.hpp>
#include <rath/net/retry.hpp>
#include <rath/net/sse.hpp>

#include "lib/llm/transport.hpp"

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::llm::detail {

// What a client lends to each of its calls (it outlives them): the HTTP client, the
// provider name used in errors, the key scrubbed from error text, the retry policy and
// the retry timer (ChatClientOptions::sleep in tests).
struct Endpoint {
    std::shared_ptr<net::HttpClient> http{};
    std::string provider{};
    std::string secret{};
    net::RetryPolicy retry{};
    SleepFn sleep{};
    net::SseLimits sse{};  // the HTTP client's max_sse_line_bytes / max_sse_event_bytes
};

// The retry settings of a provider (its max attempts and base delay) with the client's
// cap, jitter and Retry-After bound.
net::RetryPolicy retry_policy(std::optional<int> max_attempts, std::optional<double> base_seconds,
                              const ChatClientOptions& options);
// A client's endpoint: the shared HTTP client of `options`, the retry policy of
// `retry_max_attempts` / `retry_base_seconds` and the options' retry knobs.
Endpoint make_endpoint(std::string provider, std::string secret, std::optional<int> retry_max_attempts,
                       std::optional<double> retry_base_seconds, const ChatClientOptions& options);

// One call, prepared before anything is awaited (so a caller's request may go away once
// the call started).
struct PreparedCall {
    net::HttpRequest request{};
    std::optional<double> timeout_seconds{};
    std::string model{};  // what a streamed answer reports as its model
};

// Maps the SSE events of one provider's stream to deltas.
class StreamDecoder {
public:
    using Emit = std::function<void(StreamDelta)>;
    virtual ~StreamDecoder() = default;
    // false: the stream is over (e.g. [DONE]); later bytes are ignored.
    virtual bool on_event(std::string_view event, std::string_view data, const Emit& emit) = 0;
    // Whether the stream so far counts as complete when the body ends here.
    virtual bool complete() const = 0;
};
using DecoderFactory = std::unique_ptr<StreamDecoder> (*)();

// nullopt: `e` is not retried. Otherwise the delay before attempt `attempt + 1`
// (Retry-After when the provider sent one within the policy's bound). Logs the retry.
std::optional<std::chrono::duration<double>> retry_decision(const net::RetryPolicy& policy, int attempt,
                                                            const std::exception_ptr& e);
[[nodiscard]] boost::asio::awaitable<void> retry_sleep(const Endpoint& ep, std::chrono::duration<double> d);

// One streamed attempt's state (lib/llm/exchange.cpp): made when the first body bytes
// arrive, so a stream waiting for its answer holds no parser, decoder or accumulator.
class StreamAttempt;
struct StreamAttemptDeleter {
    void operator()(StreamAttempt* a) const noexcept;
};
using StreamAttemptPtr = std::unique_ptr<StreamAttempt, StreamAttemptDeleter>;
StreamAttemptPtr make_stream_attempt(const PreparedCall& call, DecoderFactory decoder, const DeltaCallback* on_delta,
                                     const net::SseLimits& limits);
// Throws ResponseTooLargeError for a line or event beyond the SSE caps.
void feed_stream(StreamAttempt& a, std::string_view bytes, std::string_view provider);
// The body ended: the folded response (throws for a stream cut before its terminator).
ChatResponse finish_stream(StreamAttempt& a, std::string_view provider);
// Attaches what the stream delivered to a failure; true when any delta went out.
bool stream_delivered(const StreamAttempt* a) noexcept;
void attach_partial(const StreamAttempt& a, ProviderError& e);

// The call, retried per `ep.retry`. With `decoder`, the body is an SSE stream (T is
// ChatResponse): deltas go to *on_delta and their fold into `out`. Without, a 2xx body
// becomes `out` through `parse`. `ep`, `out` and `*on_delta` are borrowed until the
// awaitable completes; the call owns its request, re-sent on each attempt.
template <class T>
boost::asio::awaitable<void> async_exchange(const Endpoint& ep, PreparedCall call, T (*parse)(net::HttpResponse&),
                                            DecoderFactory decoder, const DeltaCallback* on_delta, T& out) {
    const int attempts = ep.retry.max_attempts < 1 ? 1 : ep.retry.max_attempts;
    net::HttpResponse resp;
    for (int k = 1;; ++k) {
        std::exception_ptr err{};
        bool delivered = false;
        if (!decoder) {
            try {
                co_await start_send(*ep.http, call.request, call.timeout_seconds, resp);
                throw_if_error_status(ep.provider, resp, ep.secret);
                out = parse(resp);  // may take the body: the response is not read again
                co_return;
            } catch (...) {
                err = map_send_error(std::current_exception(), ep.provider, ep.secret);
            }
        } else if constexpr (std::is_same_v<T, ChatResponse>) {
            StreamAttemptPtr st;
            // Named, not a temporary inside the co_await expression (GCC 12).
            std::function<void(std::string_view)> sink = [&](std::string_view bytes) {
                if (!st) st = make_stream_attempt(call, decoder, on_delta, ep.sse);
                feed_stream(*st, bytes, ep.provider);
            };
            try {
                co_await async_send_stream(*ep.http, call.request, ep.provider, ep.secret, call.timeout_seconds, sink);
                if (!st) st = make_stream_attempt(call, decoder, on_delta, ep.sse);
                out = finish_stream(*st, ep.provider);
                co_return;
            } catch (ProviderError& e) {
                if (st) attach_partial(*st, e);  // without bytes there is nothing to attach
                err = std::current_exception();
            } catch (...) {
                err = std::current_exception();
            }
            delivered = stream_delivered(st.get());
        }
        // Never re-send a stream whose deltas already reached the caller.
        std::optional<std::chrono::duration<double>> delay{};
        if (!delivered && k < attempts) delay = retry_decision(ep.retry, k, err);
        if (!delay) std::rethrow_exception(err);
        co_await retry_sleep(ep, *delay);
    }
}

}  // namespace rath::llm::detail
