#pragma once
// LoopOptions: what run_session_loop is configured with (session.md §2.1).
#include <rath/llm/provider.hpp>
#include <rath/llm/stream_delta.hpp>
#include <rath/tool/tool_set.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace rath::async {
class Admission;
class Runtime;
}  // namespace rath::async

namespace rath::llm {
class ChatClient;
}

namespace rath {

class LoopExecutor;
class LoopObserver;

// A run's identity fixed in advance instead of drawn fresh: the output session's id and
// the times in its persisted file's header (created_at) and trailer (closed_at), ISO-8601
// UTC as the writer writes them. What a replay sets to write a recorded run's file again
// byte for byte; each unset field is drawn as usual (a fresh UUID, the clock).
struct RunIdentity {
    std::optional<std::string> session_id{};
    std::optional<std::string> created_at{};
    std::optional<std::string> closed_at{};
};

// Sees every streamed delta of the loop's model calls, on a runtime thread, and what
// the run's tools report while they run (a delta with only tool_event set:
// rath/tool/tool_event.hpp), on the reporting thread; one at a time per run.
using StreamCallback = std::function<void(const llm::StreamDelta&)>;

struct LoopOptions {
    // With no field set, the user session's provider (Session::to(Provider)); with
    // neither, and no executor or client either, run_session_loop throws
    // std::invalid_argument before it creates anything (session.md §9).
    llm::Provider provider{};
    tool::ToolSet tools{};                      // merged with the six built-ins
    std::shared_ptr<LoopExecutor> executor{};   // custom executor (no on_event with it)
    std::shared_ptr<llm::ChatClient> client{};  // chat client (default: chat_client_for(provider))
    int max_tool_rounds = 64;                   // bounds LLM calls
    StreamCallback on_event{};                  // streaming deltas and tool events (above)
    bool persist = false;                       // write through the JSONL writer
    // Record every model call of the run (llm/recording.hpp) in <transcript
    // stem>.llm.jsonl beside the persisted transcript, for `rath replay` and `rath
    // sessions resume`; implies persist. Also on when the provider's record_llm is true
    // (config.json: llm.providers.<name>.record), and for every run when the environment
    // variable OPENRATH_RECORD_LLM is 1, true, yes or on (any case). Recorded through
    // the loop's chat client: a run with a custom executor records nothing (a warning
    // says so).
    bool record_llm = false;
    // The JSONL file of each run (default <sessions>/<id>.jsonl), for the output
    // session's id: "{session_id}" in it is replaced by the id, and a directory
    // (existing, or written with a trailing '/') holds <id>.jsonl. A fixed file is one
    // file for every run: a run started while another writes it fails (PersistenceError
    // at read), and a later run replaces an earlier one's file.
    std::optional<std::filesystem::path> persist_path{};
    std::optional<std::string> sandbox_handle_id{};       // recorded in the persisted header
    // Fixed id and file times for the run (see RunIdentity). Two runs given one session
    // id at once are two sessions with one id: the later one takes the registry entry,
    // and persisting both to one directory fails as for a fixed persist_path. A
    // session_id that is not a lowercase 8-4-4-4-12 UUID throws std::invalid_argument
    // from run_session_loop, before anything runs.
    RunIdentity identity{};
    bool lazy = true;                                     // false: wait before returning
    async::Runtime* runtime = nullptr;                    // default: Runtime::default_runtime()
    // Bounds how many loops started by run_session_loop run at once: the rest wait, in
    // call order, before they start (as small records: no coroutine frame, no request
    // yet). Null: no bound. The coroutine form (async_run_session_loop) is the caller's
    // own concurrency and does not take a place.
    std::shared_ptr<async::Admission> admission{};
    // Each run's deadline, counted from the call that starts it (time queued at the
    // admission gate included): when it passes the run is cancelled as by
    // Session::cancel(CancelReason::deadline) and its reader gets rath::Cancelled.
    // Unset: no deadline. The coroutine form is bounded by its caller instead
    // (async::with_timeout around it).
    std::optional<std::chrono::steady_clock::duration> timeout{};
    // Told about every model call and tool call of the run (loop/observer.hpp).
    std::shared_ptr<LoopObserver> observer{};
    // Recorded in each output session's lineage extras when the run is created, before
    // anything is persisted (so the file's header has them): what a service ties a run
    // to, such as the W3C traceparent of the request that started it. A valid
    // "traceparent" here is the run's trace context: its MCP tool calls send it on
    // (rath/session/trace_context.hpp).
    boost::json::object lineage_extras{};
};

}  // namespace rath
