#pragma once
// rath::pg::RunQueue: a durable queue of runs in PostgreSQL (table rath_runs in the
// rath schema, rath/pg/session_store.hpp), for worker processes that take runs, keep
// them alive with heartbeats, and finish them.
//
// - async_enqueue adds a run and, in the same transaction, NOTIFYs the queue's channel,
//   so idle workers blocked in async_wait_for_work wake at once.
// - async_claim takes the oldest run that is queued or whose lease expired (its worker
//   died or stalled), with FOR UPDATE SKIP LOCKED: concurrent claimers never take the
//   same run and never wait for each other. The claim sets a lease (owner, expiry) and
//   counts the attempt.
// - async_heartbeat extends the lease; async_complete / async_fail finish the run. Each
//   succeeds only while `owner` still holds the run: a worker whose lease expired and
//   whose run was taken over learns so (false) and must drop its work.
//
// - async_record_llm_call and async_start_tool_call / async_finish_tool_call keep what a
//   run did (model responses; tool calls as they start and end) beside it, written only
//   by the run's owner, so that a worker taking the run over can go on from there.
//
// What this does not do: run anything. Executing a claimed run (the agent loop, its
// persistence, resuming at a step boundary) is the worker's job.
//
// Thread safety: every member function may be called from any thread at once, except
// async_wait_for_work and async_wait_for_finished: one waiter at a time for each. Cancellation: cancelling an
// awaiting coroutine ends its wait only (a claim or completion already sent still takes
// effect). Errors: PgError for database failures (a lost connection fails the call; the
// next one reconnects), PersistenceError for a schema newer than this rath.
#include <rath/pg/connection.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::pg {

struct RunQueueOptions {
    std::string conninfo;
    std::string schema = "public";
    std::string queue = "default";  // several queues share the table; each has its own channel
    async::Runtime* runtime = nullptr;
};

struct ClaimedRun {
    std::int64_t id = 0;
    std::string payload;  // the JSON text given to async_enqueue
    int attempts = 0;     // 1 on the first claim, more after lease expiries
};

// One tool call of a run as recorded (async_start_tool_call / async_finish_tool_call).
struct RecordedToolCall {
    std::size_t index = 0;      // 0, 1, ... over the run's dispatched tool calls, in call order
    std::string call_id{};      // the model's id of the call
    std::string name{};
    std::string arguments{};    // JSON text of the arguments object
    bool idempotent = false;    // as the runner judged the tool when it started the call
    std::optional<std::string> result{};  // the tool-result body; unset: started, never finished
    bool interrupted = false;   // the result is the runner's interrupted_tool_call_message row
};

// The message of the tool-result row rath-worker gives a call of a tool that is not
// idempotent, started by a worker that died before the call finished: the call is not
// run again (it may or may not have taken effect), and the model is told so. The row is
// tool::failure_content("tool_interrupted", this message, "<tool name>"):
// {"ok": false, "error_kind": "tool_interrupted", "message": "...", "detail": "<tool>"}.
inline constexpr const char* interrupted_tool_call_message =
    "the call was interrupted by a worker failure and was not repeated: the tool is not idempotent, "
    "so it may or may not have taken effect";

enum class RunState { queued, running, done, failed };

struct RunStatus {
    RunState state = RunState::queued;
    int attempts = 0;
    std::optional<std::string> owner;
    std::optional<std::string> result;  // JSON text, once done
    std::optional<std::string> error;   // once failed
};

class RunQueue {
public:
    // Never blocks; connections are made by the first calls.
    explicit RunQueue(RunQueueOptions options);
    ~RunQueue();
    RunQueue(const RunQueue&) = delete;
    RunQueue& operator=(const RunQueue&) = delete;

    // Creates or upgrades the schema (the other calls do it first, once).
    [[nodiscard]] boost::asio::awaitable<void> async_migrate();
    // `payload` must be JSON text. Returns the run's id.
    [[nodiscard]] boost::asio::awaitable<std::int64_t> async_enqueue(std::string payload);
    [[nodiscard]] boost::asio::awaitable<std::optional<ClaimedRun>> async_claim(std::string owner,
                                                                                std::chrono::milliseconds lease);
    [[nodiscard]] boost::asio::awaitable<bool> async_heartbeat(std::int64_t id, std::string owner,
                                                               std::chrono::milliseconds lease);
    // `result` must be JSON text.
    [[nodiscard]] boost::asio::awaitable<bool> async_complete(std::int64_t id, std::string owner, std::string result);
    [[nodiscard]] boost::asio::awaitable<bool> async_fail(std::int64_t id, std::string owner, std::string error);
    // Records the model call number `index` (0, 1, ...) of run `id` — its request and
    // response as JSON text (rath/llm/recording.hpp's "request" and "response") — while
    // `owner` holds the run; false when it no longer does (nothing is written). A call
    // already recorded under that index is kept as it was.
    [[nodiscard]] boost::asio::awaitable<bool> async_record_llm_call(std::int64_t id, std::string owner,
                                                                     std::size_t index, std::string request,
                                                                     std::string response);
    // The recorded model calls of run `id` in index order: (request, response) JSON text.
    [[nodiscard]] boost::asio::awaitable<std::vector<std::pair<std::string, std::string>>> async_llm_calls(
        std::int64_t id);
    // Records that tool call `call.index` of run `id` starts (its result left unset) while
    // `owner` holds the run; false when it no longer does (nothing is written). A record
    // already under that index is replaced: the call is starting (again) now. One
    // statement, one round trip.
    [[nodiscard]] boost::asio::awaitable<bool> async_start_tool_call(std::int64_t id, std::string owner,
                                                                     RecordedToolCall call);
    // Records the result of tool call `index` of run `id` while `owner` holds the run;
    // false when it no longer does or the call was never started (nothing is written).
    [[nodiscard]] boost::asio::awaitable<bool> async_finish_tool_call(std::int64_t id, std::string owner,
                                                                      std::size_t index, std::string result,
                                                                      bool interrupted = false);
    // The recorded tool calls of run `id` in index order.
    [[nodiscard]] boost::asio::awaitable<std::vector<RecordedToolCall>> async_tool_calls(std::int64_t id);
    // nullopt for an unknown id.
    [[nodiscard]] boost::asio::awaitable<std::optional<RunStatus>> async_status(std::int64_t id);
    // Waits until an enqueue on this queue is notified (true) or `timeout` passes
    // (false). The worker's loop: claim; when nothing is there, wait; repeat. The call
    // that makes the listening connection (the first, and after the connection broke)
    // returns true at once: enqueues since the last claim may have gone unannounced, so
    // the caller should look. A true is a hint, not a promise: another worker may claim
    // the run first.
    [[nodiscard]] boost::asio::awaitable<bool> async_wait_for_work(std::chrono::milliseconds timeout);
    // The same for finished runs: async_complete / async_fail NOTIFY the queue's finished
    // channel in their transaction, so a waiter for results (rath::cluster::Client)
    // wakes when any run of the queue finishes. One waiter at a time per RunQueue.
    [[nodiscard]] boost::asio::awaitable<bool> async_wait_for_finished(std::chrono::milliseconds timeout);
    // The same, saying which runs: each finish's notification carries the run's id, so a
    // waiter for many runs looks at the ones named instead of at all of them.
    // look_at_all: the listening connection was made or remade (notifications may have
    // been missed) or a notification named no run. Same rules as async_wait_for_finished.
    struct FinishedNotice {
        bool timed_out = false;
        bool look_at_all = false;
        std::vector<std::int64_t> ids;
    };
    [[nodiscard]] boost::asio::awaitable<FinishedNotice> async_wait_for_finished_runs(
        std::chrono::milliseconds timeout);
    // Of `ids`, those that are done or failed, with their status (one round trip).
    [[nodiscard]] boost::asio::awaitable<std::vector<std::pair<std::int64_t, RunStatus>>> async_finished(
        std::vector<std::int64_t> ids);

    // Round trips of the queue's pipelined connection, plus the listening connections'
    // LISTENs (a notification waited for is pushed by the server: not a round trip).
    [[nodiscard]] ConnectionStats stats() const noexcept;

    struct State;

private:
    std::shared_ptr<State> st_;
};

}  // namespace rath::pg
