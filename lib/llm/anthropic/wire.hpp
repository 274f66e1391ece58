#pragma once
// Anthropic Messages wire format: request translation, response normaliser and the
// stream event -> delta mapper. Pure functions, no I/O.
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_delta.hpp>

#include "lib/llm/transport.hpp"

#include <boost/json/object.hpp>
#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace rath::llm::anthropic {

// §5.2. `stream` adds "stream": true.
boost::json::object build_messages_body(const ChatRequest& request, const std::string& model, bool stream,
                                        detail::TransportExtras* transport = nullptr);

// end_turn/stop_sequence/pause_turn -> stop, max_tokens -> length, tool_use ->
// tool_calls, refusal -> content_filter, anything else -> stop.
FinishReason map_stop_reason(std::string_view s);

// §5.3 on a decoded 2xx body.
ChatResponse parse_messages_response(std::string_view body);

// Maps stream events to deltas. Usage: input tokens from message_start, overridden by
// message_delta.usage.input_tokens; output tokens from the last output_tokens seen
// (top-level message_delta.usage or delta.usage). `event: error` throws StreamError.
class EventMapper {
public:
    using Emit = std::function<void(StreamDelta)>;
    void on_event(std::string_view event, std::string_view data, const Emit& emit);
    bool stopped() const noexcept { return stopped_; }  // message_stop seen
    bool finished() const noexcept { return finish_seen_; }

private:
    void emit_usage(const Emit& emit);
    struct ToolBlock {
        std::string input_json{};  // content_block_start.input when non-empty
        bool got_delta = false;
    };
    std::int64_t input_tokens_ = 0, output_tokens_ = 0;
    std::map<std::int64_t, ToolBlock> tool_blocks_{};
    bool stopped_ = false;
    bool finish_seen_ = false;
};

}  // namespace rath::llm::anthropic
