#include "lib/llm/stream_driver.hpp"

#include <rath/llm/error.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/net/sse.hpp>

#include <memory>

namespace rath::llm::detail {

namespace {

// Feeds body bytes through SSE framing and the provider decoder into the accumulator
// and the caller's callback.
struct StreamState {
    StreamState(std::string model, const DeltaCallback* cb, std::unique_ptr<StreamDecoder> d)
        : acc(std::move(model)), on_delta(cb), decoder(std::move(d)) {}

    StreamAccumulator acc;
    const DeltaCallback* on_delta;
    std::unique_ptr<StreamDecoder> decoder;
    net::SseParser sse;
    std::size_t delivered = 0;
    bool ended = false;

    void on_event(net::SseEvent& ev) {
        if (ended) return;
        StreamDecoder::Emit emit = [this](StreamDelta d) {
            acc.add(d);
            ++delivered;
            if (*on_delta) (*on_delta)(d);
        };
        if (!decoder->on_event(ev.event, ev.data, emit)) ended = true;
    }
    void feed(std::string_view bytes) {
        if (ended) return;
        sse.feed(bytes, [this](net::SseEvent& ev) { on_event(ev); });
    }
    // The body ended: flush the framing; a stream without its terminator is truncated.
    void finish(std::string_view provider) {
        if (!ended) sse.finish([this](net::SseEvent& ev) { on_event(ev); });
        if (!ended && !decoder->complete())
            throw ProviderConnectionError(ProviderErrorInfo{
                .provider = std::string(provider),
                .status = 200,
                .type = "incomplete_stream",
                .message = "the stream ended before its terminator (truncated response)"});
    }
    // A failed stream that delivered something (or a stream error) carries what it got.
    void attach_partial(ProviderError& e) const {
        if (delivered > 0 || dynamic_cast<StreamError*>(&e)) {
            StreamAccumulator partial = acc;
            partial.fail();
            e.set_partial(std::make_shared<const ChatResponse>(partial.result()));
        }
    }
};

}  // namespace

boost::asio::awaitable<void> async_run_stream_into(StreamCall call, DeltaCallback on_delta, ChatResponse& out) {
    const RetryOptions& retry = *call.retry;
    const int attempts = retry.max_attempts < 1 ? 1 : retry.max_attempts;
    for (int k = 1;; ++k) {
        std::exception_ptr err{};
        bool delivered = false;
        {
            // Made when the first body bytes arrive: a stream waiting for its answer (a
            // fan-out parks thousands) holds no accumulator, decoder or SSE buffer.
            std::unique_ptr<StreamState> st;
            auto state = [&]() -> StreamState& {
                if (!st) st = std::make_unique<StreamState>(call.model, &on_delta, call.make_decoder());
                return *st;
            };
            // Named, not a temporary inside the co_await expression (GCC 12).
            std::function<void(std::string_view)> sink = [&state](std::string_view bytes) { state().feed(bytes); };
            try {
                co_await async_send_stream(*call.http, call.request, call.provider, call.secret, call.timeout_seconds,
                                           sink);
                state().finish(call.provider);
                out = st->acc.result();
                co_return;
            } catch (ProviderError& e) {
                if (st) st->attach_partial(e);  // without bytes there is nothing to attach
                err = std::current_exception();
            } catch (...) {
                err = std::current_exception();
            }
            delivered = st && st->delivered > 0;
        }
        // Never re-send a stream whose deltas already reached the caller.
        std::optional<std::chrono::duration<double>> delay{};
        if (!delivered && k < attempts) delay = retry_decision(retry, k, err);
        if (!delay) std::rethrow_exception(err);
        co_await retry_sleep(retry, *delay);
    }
}

}  // namespace rath::llm::detail
