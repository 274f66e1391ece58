#pragma once
// The agent loop (session.md §2): the user session's rows plus, per round, one LLM
// call, one assistant row and one tool-result row per requested tool call, until the
// model stops or max_tool_rounds calls were made. The round algorithm is LoopStep
// (loop_step.hpp); these functions drive it on the runtime.
//
// run_session_loop returns at once with a *pending* output session: its id, lineage
// and sandbox are readable immediately; reading its transcript or usage waits for the
// loop (and rethrows its error, once). Inputs may themselves be pending: the loop waits
// for them on the runtime, so chains never block the caller. async_run_session_loop is
// the same operation for coroutines and returns the finished session.
//
// Thread safety: callable from any thread, any number of loops at once. Cancellation:
// Session::cancel() on the output, LoopOptions::timeout, and Runtime::drain/shutdown
// stop the loop: the in-flight model request is aborted, running tool processes are
// killed, no further row is published, a persisted run keeps its partial file (the rows
// written so far), and the output's first read throws rath::Cancelled with the reason
// (requested, deadline, shutdown). Cancelling the coroutine form cancels the loop it
// runs (rath::Cancelled, reason requested). Errors (rethrown at the
// output's first read, or by the coroutine form): ProviderError and ProviderConfigError
// from the model call, ToolNameConflictError for clashing tool names, what a budget
// callback throws, std::invalid_argument for on_event with a custom executor.
#include <rath/loop/executor.hpp>
#include <rath/loop/options.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>

namespace rath {

// The sync facade: never blocks (unless lazy=false).
Session run_session_loop(const Session& user, const Session& agent, LoopOptions options = {});
// The same with options shared, read-only, by many loops (an Agent passes one
// snapshot to all its sessions instead of a copy each).
Session run_session_loop(const Session& user, const Session& agent, std::shared_ptr<const LoopOptions> options);

// The coroutine form: returns the finished output session.
[[nodiscard]] boost::asio::awaitable<Session> async_run_session_loop(Session user, Session agent, LoopOptions options = {});
[[nodiscard]] boost::asio::awaitable<Session> async_run_session_loop(Session user, Session agent,
                                                                     std::shared_ptr<const LoopOptions> options);

}  // namespace rath
