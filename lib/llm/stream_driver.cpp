#include "lib/llm/stream_driver.hpp"

#include <rath/llm/error.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/net/sse.hpp>

namespace rath::llm::detail {

boost::asio::awaitable<ChatResponse> async_run_stream(StreamCall call, DeltaCallback on_delta) {
    StreamAccumulator acc(call.model);
    std::size_t delivered = 0;
    RetryOptions retry = call.retry;
    // Never re-send a stream whose deltas already reached the caller.
    retry.retryable = [&delivered](const std::exception_ptr& e) {
        if (delivered > 0) return false;
        try {
            std::rethrow_exception(e);
        } catch (const ProviderError& pe) {
            return pe.retryable();
        } catch (...) {
            return false;
        }
    };
    co_return co_await async_retry_with_backoff<ChatResponse>(
        [&]() -> boost::asio::awaitable<ChatResponse> {
            auto decoder = call.make_decoder();
            net::SseParser sse;
            bool ended = false;
            auto emit = [&](StreamDelta d) {
                acc.add(d);
                ++delivered;
                if (on_delta) on_delta(d);
            };
            auto on_event = [&](net::SseEvent& ev) {
                if (ended) return;
                if (!decoder->on_event(ev.event, ev.data, emit)) ended = true;
            };
            try {
                co_await async_send_stream(*call.http, call.request, call.provider, call.secret, call.timeout_seconds,
                                           [&](std::string_view bytes) {
                                               if (!ended) sse.feed(bytes, on_event);
                                           });
                if (!ended) sse.finish(on_event);
                if (!ended && !decoder->complete())
                    throw ProviderConnectionError(ProviderErrorInfo{
                        .provider = call.provider,
                        .status = 200,
                        .type = "incomplete_stream",
                        .message = "the stream ended before its terminator (truncated response)"});
            } catch (ProviderError& e) {
                if (delivered > 0 || dynamic_cast<StreamError*>(&e)) {
                    StreamAccumulator partial = acc;
                    partial.fail();
                    e.set_partial(std::make_shared<const ChatResponse>(partial.result()));
                }
                throw;
            }
            co_return acc.result();
        },
        retry);
}

}  // namespace rath::llm::detail
