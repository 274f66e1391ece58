#pragma once
// Recording a session's model calls for deterministic replay: the RecordingChatClient
// decorator (any ChatClient in, every completed call out to a sink) and the recording
// file's format, <transcript stem>.llm.jsonl beside the persisted transcript, one JSON
// object per line:
//
//   {"record_type":"config", ...}   first: what the loop was run with (recording_config)
//   {"record_type":"llm_call","index":0,"provider_kind":..,"model":..,"request":{..},
//    "response":{..},"raw":"..."|null,"streamed":false,"duration_ms":12.5}
//
// "request" is the body rath's OpenAI encoding builds for the request (model, messages,
// tools, sampling fields; stream flags left out, whichever provider kind sent it), so
// that two requests compare as JSON whatever the provider; "response" is the answer as
// the client parsed it, in OpenAI Chat completion shape (response_from_json reads it
// back to the same ChatResponse); "raw" is the vendor body as received when the client
// kept one (a streamed answer has none).
//
// Thread safety: a RecordingChatClient may be called from any threads at once, as its
// inner client; the sink then runs on those threads (it must be thread-safe).
// Cancellation and errors: the inner client's; a call that fails is not recorded, and
// what the sink throws fails that call.
#include <rath/error.hpp>
#include <rath/llm/chat_client.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::llm {

struct RecordedCall {
    std::size_t index = 0;  // 0, 1, 2, ... per recording client
    std::string provider_kind{};
    std::string model{};
    boost::json::object request{};
    boost::json::object response{};
    std::optional<std::string> raw{};
    bool streamed = false;
    double duration_ms = 0;
};

class RecordingChatClient final : public ChatClient {
public:
    using Sink = std::function<void(RecordedCall)>;
    // Throws std::invalid_argument for a null inner client.
    RecordingChatClient(std::shared_ptr<ChatClient> inner, Sink sink);

    const Provider& provider() const noexcept override { return inner_->provider(); }
    std::string_view kind() const noexcept override { return inner_->kind(); }
    bool supports_streaming() const noexcept override { return inner_->supports_streaming(); }

private:
    boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                             const DeltaCallback* on_delta) override;

    std::shared_ptr<ChatClient> inner_;
    Sink sink_;
    struct Counter;
    std::shared_ptr<Counter> counter_;
};

// The request body recorded for `request` sent to `model` (see the file comment).
// Throws ProviderConfigError for what the encoding refuses (NaN sampling values).
[[nodiscard]] boost::json::object request_to_json(const ChatRequest& request, const std::string& model);
// The provider's sampling defaults as the body fields they add (no model, messages or
// tools): what a replay's provider sends to build the same bodies again.
[[nodiscard]] boost::json::object sampling_to_json(const Provider& provider);
// `r` in OpenAI Chat completion shape.
[[nodiscard]] boost::json::object response_to_json(const ChatResponse& r);
// The response a recorded "response" object stands for (the raw payload is its text).
// Throws ResponseFormatError for what is no completion object.
[[nodiscard]] ChatResponse response_from_json(const boost::json::object& o);

// A recording line that is no valid record: names the file, line and problem.
class RecordingFormatError : public Error {
public:
    using Error::Error;
};

// What the loop ran with, the recording's first record.
struct RecordingConfig {
    std::string session_id{};
    std::string provider_kind{};
    std::string model{};
    boost::json::object sampling{};      // sampling_to_json of the run's provider
    boost::json::array agent_rows{};     // the agent session's rows, as persisted chunk records
    std::size_t seed_rows = 0;           // how many transcript rows came from the user session
    std::vector<FunctionTool> tools{};   // the schemas the requests offered, in order
    std::vector<std::string> user_tools{};  // which of them were the program's own (not built-ins)
    int max_tool_rounds = 64;
    // The session arrived with its sandbox already open: its workspace may hold what the
    // program put there before the run, which a fresh workspace would not.
    bool sandbox_prepared = false;
};

struct Recording {
    RecordingConfig config{};
    std::vector<RecordedCall> calls{};
};

[[nodiscard]] boost::json::object config_to_json(const RecordingConfig& c);
[[nodiscard]] boost::json::object call_to_json(const RecordedCall& c);

// Parses a recording's text; `source` names it in errors. Throws RecordingFormatError
// ("<source>:<line>: <problem>") for invalid JSON, a record of an unknown type or with
// a missing or wrongly typed field, a config record that is not first or repeated,
// call indices out of order, and for a recording without its config record.
[[nodiscard]] Recording parse_recording(std::string_view text, std::string_view source = "recording");

}  // namespace rath::llm
