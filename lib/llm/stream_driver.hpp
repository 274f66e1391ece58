#pragma once
// The streaming exchange shared by the HTTP clients: bytes -> SSE events -> provider
// decoder -> deltas (forwarded to the caller, folded into the response). Only the
// open phase is retried: once a delta went out, failures propagate with the partial
// response attached.
#include <rath/llm/chat_client.hpp>

#include "lib/llm/transport.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace rath::llm::detail {

class StreamDecoder {
public:
    using Emit = std::function<void(StreamDelta)>;
    virtual ~StreamDecoder() = default;
    // false: the stream is over (e.g. [DONE]); later bytes are ignored.
    virtual bool on_event(std::string_view event, std::string_view data, const Emit& emit) = 0;
    // Whether the stream so far counts as complete when the body ends here.
    virtual bool complete() const = 0;
};

// One streamed call. `provider`, `secret` and `retry` are borrowed from the client,
// which outlives the awaitable (a waiting stream then holds no copy of the key or the
// retry policy).
struct StreamCall {
    net::HttpClient* http = nullptr;
    net::HttpRequest request{};
    std::string_view provider{};
    std::string_view secret{};
    std::optional<double> timeout_seconds{};
    const RetryOptions* retry = nullptr;
    std::string model{};
    std::unique_ptr<StreamDecoder> (*make_decoder)() = nullptr;
};

// The retry loop is written out here (one frame per stream, as for the whole-body
// calls): only the open phase is retried, never a stream whose deltas already reached
// the caller.
// The result goes into `out`, borrowed from the caller (no result slot in the frame a
// waiting stream keeps).
boost::asio::awaitable<void> async_run_stream_into(StreamCall call, DeltaCallback on_delta, ChatResponse& out);

}  // namespace rath::llm::detail
