#include "lib/llm/exchange.hpp"

#include <rath/async/deadline.hpp>
#include <rath/log.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/net/sse.hpp>

#include <algorithm>
#include <cstdio>

namespace rath::llm::detail {

net::RetryPolicy retry_policy(std::optional<int> max_attempts, std::optional<double> base_seconds,
                              const ChatClientOptions& options) {
    return net::RetryPolicy{.max_attempts = max_attempts.value_or(4),
                            .base = std::chrono::duration<double>(base_seconds.value_or(0.5)),
                            .cap = std::chrono::duration<double>(options.retry_cap_seconds),
                            .jitter = options.retry_jitter,
                            .max_retry_after = std::chrono::duration<double>(options.max_retry_after_seconds)};
}

Endpoint make_endpoint(std::string provider, std::string secret, std::optional<int> retry_max_attempts,
                       std::optional<double> retry_base_seconds, const ChatClientOptions& options) {
    Endpoint ep;
    ep.http = make_http(options);
    ep.provider = std::move(provider);
    ep.secret = std::move(secret);
    ep.retry = retry_policy(retry_max_attempts, retry_base_seconds, options);
    ep.sleep = options.sleep;
    const auto& http = ep.http->options();
    ep.sse = net::SseLimits{.max_line = http.max_sse_line_bytes, .max_event = http.max_sse_event_bytes};
    return ep;
}

std::optional<std::chrono::duration<double>> retry_decision(const net::RetryPolicy& policy, int attempt,
                                                            const std::exception_ptr& e) {
    std::optional<net::Seconds> retry_after;
    std::string what;
    try {
        std::rethrow_exception(e);
    } catch (const ProviderError& pe) {
        if (!pe.retryable()) return std::nullopt;
        if (pe.retry_after() && *pe.retry_after() <= policy.max_retry_after) retry_after = pe.retry_after();
        what = pe.type().empty() ? "ProviderError" : pe.type();
        if (pe.status() > 0) what += " (HTTP " + std::to_string(pe.status()) + ")";
    } catch (...) {
        return std::nullopt;  // only provider errors say whether they are worth another attempt
    }
    net::RetryPolicy p = policy;
    // A server-mandated delay is honoured up to the Retry-After bound, not the backoff cap.
    if (retry_after) p.cap = std::max(policy.cap, policy.max_retry_after);
    const net::Seconds delay = net::backoff_delay(p, attempt - 1, retry_after);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", delay.count());
    rath::log(LogLevel::warning, "rath.llm",
              "LLM call failed with " + what + "; retry " + std::to_string(attempt) + "/" +
                  std::to_string(std::max(1, policy.max_attempts)) + " in " + buf + "s");
    return delay;
}

boost::asio::awaitable<void> retry_sleep(const Endpoint& ep, std::chrono::duration<double> d) {
    if (ep.sleep) {
        co_await ep.sleep(d);
        co_return;
    }
    co_await rath::async::async_sleep(std::chrono::duration_cast<std::chrono::steady_clock::duration>(d));
}

// Body bytes -> SSE events -> provider decoder -> deltas, forwarded to the caller and
// folded into the accumulator.
class StreamAttempt {
public:
    StreamAttempt(std::string model, const DeltaCallback* cb, std::unique_ptr<StreamDecoder> d,
                  const net::SseLimits& limits)
        : acc_(std::move(model)), on_delta_(cb), decoder_(std::move(d)), sse_(limits) {}

    void feed(std::string_view bytes, std::string_view provider) {
        if (ended_) return;
        try {
            sse_.feed(bytes, [this](net::SseEvent& ev) { on_event(ev); });
        } catch (const net::SseError& e) {
            throw_too_large(e, provider);
        }
    }
    ChatResponse finish(std::string_view provider) {
        if (!ended_) {
            try {
                sse_.finish([this](net::SseEvent& ev) { on_event(ev); });
            } catch (const net::SseError& e) {
                throw_too_large(e, provider);
            }
        }
        if (!ended_ && !decoder_->complete())
            throw ProviderConnectionError(ProviderErrorInfo{
                .provider = std::string(provider),
                .status = 200,
                .type = "incomplete_stream",
                .message = "the stream ended before its terminator (truncated response)"});
        return acc_.result();
    }
    bool delivered() const noexcept { return delivered_ > 0; }
    // A failed stream that delivered something (or a stream error) carries what it got.
    void attach_partial(ProviderError& e) const {
        if (delivered_ > 0 || dynamic_cast<StreamError*>(&e)) {
            StreamAccumulator partial = acc_;
            partial.fail();
            e.set_partial(std::make_shared<const ChatResponse>(partial.result()));
        }
    }

private:
    // The SSE framing's cap, as the provider error family callers catch.
    [[noreturn]] static void throw_too_large(const net::SseError& e, std::string_view provider) {
        throw ResponseTooLargeError(ProviderErrorInfo{
            .provider = std::string(provider),
            .status = 200,
            .type = e.kind() == net::SseError::Kind::line_too_large ? "sse_line_too_large" : "sse_event_too_large",
            .message = e.what(),
            .should_retry = false});
    }

    void on_event(net::SseEvent& ev) {
        if (ended_) return;
        StreamDecoder::Emit emit = [this](StreamDelta d) {
            acc_.add(d);
            ++delivered_;
            if (on_delta_) (*on_delta_)(d);
        };
        if (!decoder_->on_event(ev.event, ev.data, emit)) ended_ = true;
    }

    StreamAccumulator acc_;
    const DeltaCallback* on_delta_;
    std::unique_ptr<StreamDecoder> decoder_;
    net::SseParser sse_;
    std::size_t delivered_ = 0;
    bool ended_ = false;
};

void StreamAttemptDeleter::operator()(StreamAttempt* a) const noexcept { delete a; }

StreamAttemptPtr make_stream_attempt(const PreparedCall& call, DecoderFactory decoder, const DeltaCallback* on_delta,
                                     const net::SseLimits& limits) {
    return StreamAttemptPtr(new StreamAttempt(call.model, on_delta, decoder(), limits));
}
void feed_stream(StreamAttempt& a, std::string_view bytes, std::string_view provider) { a.feed(bytes, provider); }
ChatResponse finish_stream(StreamAttempt& a, std::string_view provider) { return a.finish(provider); }
bool stream_delivered(const StreamAttempt* a) noexcept { return a && a->delivered(); }
void attach_partial(const StreamAttempt& a, ProviderError& e) { a.attach_partial(e); }

}  // namespace rath::llm::detail
