#pragma once
// OpenAI Chat Completions wire format: request body builder, response normaliser and
// the chunk -> delta mapper for streams. Pure functions, no I/O.
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_delta.hpp>

#include "lib/llm/transport.hpp"

#include <boost/json/object.hpp>
#include <simdjson.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace rath::llm::openai {

// A request body as a head plus shared pieces: the ToolList's encoding of the tools
// (made once per list), then the rest (shared between requests with equal settings).
// Concatenated they are the body: what HttpRequest::body and body_parts send.
struct ChatBody {
    std::string head;
    std::vector<std::shared_ptr<const std::string>> parts;
    std::string text() const;  // head and parts joined (tests, logs)
};
// §4.2: model, messages, tools (additionalProperties stripped), sampling fields in
// order, the extra create args merged last (a key the body has is replaced in place;
// transport keys go to `transport`), then the stream flags. Written as text, with the
// bytes Boost.JSON would serialize for the same object. Throws ProviderConfigError for
// stream=true in the extras of a non-stream body and for NaN/inf sampling values.
ChatBody build_chat_body(const ChatRequest& request, const std::string& model, bool stream,
                         detail::TransportExtras* transport = nullptr);

// Removes every object key named "additionalProperties" at any depth.
void strip_additional_properties(boost::json::value& v);

// §4.3 on a decoded 2xx body. Throws ResponseFormatError for non-JSON / non-object
// bodies and StreamError for a 2xx body that carries an `error` object.
ChatResponse parse_chat_response(std::string_view body, std::string_view provider = "openai");
// Same, keeping `body` itself as the raw payload instead of a copy.
ChatResponse parse_chat_response_owned(std::string body, std::string_view provider = "openai");

// Maps SSE events of a chat stream to deltas. on_event returns false at [DONE]; an
// in-band error (an `error` member or `event: error`) is thrown as StreamError after
// the deltas of that chunk were emitted; undecodable data throws ResponseFormatError.
class ChunkMapper {
public:
    using Emit = std::function<void(StreamDelta)>;
    explicit ChunkMapper(std::string provider = "openai") : provider_(std::move(provider)) {}
    bool on_event(std::string_view event, std::string_view data, const Emit& emit);
    bool done() const noexcept { return done_; }
    bool finished() const noexcept { return finish_seen_; }  // a finish_reason arrived

private:
    // `root` holds the chunk's picked top-level fields (see wire.cpp's RootKey).
    void map_chunk(const std::optional<simdjson::dom::element>* root, const Emit& emit);
    std::string provider_{};
    bool done_ = false;
    bool finish_seen_ = false;
};

}  // namespace rath::llm::openai
