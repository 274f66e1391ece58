// The agent loop's driver (session.md §2.1, §2.9, §2.10): one coroutine per output
// session that performs what its LoopStep asks for: model calls, tool batches, and the
// publication (and persistence) of new rows.
#include <rath/loop/session_loop.hpp>

#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/settled.hpp>
#include <rath/async/task_group.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/config/env.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/recording.hpp>
#include <rath/llm/registry.hpp>
#include <rath/loop/loop_step.hpp>
#include <rath/loop/observer.hpp>
#include <rath/log.hpp>
#include <rath/session/persistence/async_writer.hpp>
#include <rath/session/persistence/records.hpp>
#include <rath/session/registry.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/serialize.hpp>
#include <rath/tool/tool_table.hpp>

#include "lib/loop/effective_provider.hpp"
#include "lib/loop/operator_output.hpp"
#include "lib/session/session_state.hpp"
#include "lib/session/uuid.hpp"
#include "lib/tool/tool_call_scope.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace rath {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

void log_warning(const std::string& msg) { rath::log(LogLevel::warning, "rath.session.loop", msg); }

class DefaultExecutor final : public LoopExecutor {
public:
    DefaultExecutor(std::shared_ptr<llm::ChatClient> client, const StreamCallback* on_event)
        : client_(std::move(client)), on_event_(on_event && *on_event ? on_event : nullptr) {}

private:
    // Not a coroutine: the client's awaitable goes straight to the loop, so a parked
    // session carries no frame of this executor.
    asio::awaitable<void> do_complete(const llm::ChatRequest& request, llm::ChatResponse& out) override {
        if (on_event_ && !client_->supports_streaming())
            throw ProviderConfigError("on_event requires an async streaming client; provider_kind='" +
                                      std::string(client_->kind()) + "' does not expose async_stream");
        return client_->async_complete(request, out, on_event_);
    }

    std::shared_ptr<llm::ChatClient> client_;
    const llm::DeltaCallback* on_event_;  // the options' callback (they outlive the run)
};

// One run: what the caller's thread builds (the output session, the options, the
// completion the output waits for) and the driver's coroutine then owns.
struct LoopRun {
    Session out;
    Session user;
    Session agent;
    std::shared_ptr<const LoopOptions> opt;  // shared by every session of an Agent
    async::Lazy<void> done{};
    // LoopOptions::timeout counted from the call (time queued at the gate included).
    std::optional<std::chrono::steady_clock::time_point> deadline{};
};

// LoopOptions::record_llm, the provider's record_llm (config.json's
// llm.providers.<name>.record), or OPENRATH_RECORD_LLM set to a true word.
bool recording_requested(const LoopOptions& opt) {
    return opt.record_llm || opt.provider.record_llm.value_or(false) || config::env_flag("OPENRATH_RECORD_LLM");
}

// The recording lines of a run's model calls, from the recording client (on the thread
// that completed the call) to the loop, which queues them on the session's writer.
struct RecordedLines {
    std::mutex mu;
    std::vector<std::string> lines;
    std::string provider_kind;
    std::string model;

    std::vector<std::string> take() {
        std::lock_guard lk(mu);
        return std::exchange(lines, {});
    }
};

// What a run needs before its first step; throws what makes the run impossible (a tool
// name conflict, an unknown provider kind, on_event with a custom executor) before any
// file is written.
struct Prepared {
    std::shared_ptr<LoopExecutor> exec;
    const tool::ToolTable* table = nullptr;
    std::shared_ptr<RecordedLines> recorded{};  // set when the run records its model calls
    // Where its tools' reports go (rath/tool/tool_event.hpp): set when the run has an on_event.
    std::shared_ptr<detail::ToolEventSink> tool_events{};
};

Prepared prepare(const LoopRun& run) {
    const LoopOptions& opt = *run.opt;
    Prepared p;
    p.table = &opt.tools.table();  // may throw ToolNameConflictError
    p.exec = opt.executor;
    if (p.exec && opt.on_event)
        throw std::invalid_argument(
            "on_event with a custom executor is not supported; wire streaming inside your executor's "
            "async_complete instead.");
    const bool record = recording_requested(opt);
    if (p.exec && record)
        log_warning("record_llm: session " + run.out.id() +
                    " runs with a custom executor, whose model calls cannot be recorded; nothing is recorded");
    if (!p.exec) {
        std::shared_ptr<llm::ChatClient> client = opt.client ? opt.client : llm::chat_client_for(opt.provider);
        if (record) {
            auto lines = std::make_shared<RecordedLines>();
            lines->provider_kind = std::string(client->kind());
            lines->model = opt.provider.model ? *opt.provider.model : client->provider().model.value_or(std::string());
            client = std::make_shared<llm::RecordingChatClient>(std::move(client), [lines](llm::RecordedCall call) {
                std::string line = persistence::record_line(llm::call_to_json(call));
                std::lock_guard lk(lines->mu);
                lines->lines.push_back(std::move(line));
            });
            p.recorded = std::move(lines);
        }
        p.exec = std::make_shared<DefaultExecutor>(std::move(client), &opt.on_event);
        if (opt.on_event)
            p.tool_events = std::make_shared<detail::ToolEventSink>(
                std::shared_ptr<const StreamCallback>(run.opt, &run.opt->on_event));
    }
    return p;
}

// The recording's first record: what a replay or a resume runs the loop with again.
std::string recording_config_line(const LoopRun& run, const Prepared& p, const LoopStepConfig& c) {
    llm::RecordingConfig rc;
    rc.session_id = run.out.id();
    rc.provider_kind = p.recorded->provider_kind;
    rc.model = p.recorded->model;
    rc.sampling = llm::sampling_to_json(run.opt->provider);
    if (c.agent_rows)
        for (const auto& row : *c.agent_rows)
            rc.agent_rows.push_back(json::object{{"kind", to_string(row->kind())}, {"payload", row->payload()}});
    rc.seed_rows = c.seed.size();
    rc.tools = c.schemas.tools();
    for (const auto& t : run.opt->tools) rc.user_tools.push_back(t->name());
    rc.max_tool_rounds = c.max_tool_rounds;
    rc.sandbox_prepared = run.user.sandbox() != nullptr;
    return persistence::record_line(llm::config_to_json(rc));
}

// Queues the recording lines of the calls made since the last time.
asio::awaitable<void> persist_recorded(persistence::AsyncSessionWriter& writer, RecordedLines& recorded) {
    for (auto& line : recorded.take()) co_await writer.async_enqueue_recording(std::move(line));
}

// The schemas may come from a custom executor, whose errors are the loop's (the file,
// if any, is abandoned): asked inside the run, like the step's construction.
LoopStepConfig step_config(const LoopRun& run, const Prepared& p, const ChunkTable& agent_rows) {
    LoopStepConfig c;
    c.seed = detail::SessionAccess::raw_chunks(run.user);
    c.agent_rows = &agent_rows;
    c.tools = p.table;
    std::vector<llm::FunctionTool> custom = p.exec->tool_schemas();
    c.schemas = custom.empty() ? run.opt->tools.schemas() : llm::ToolList(std::move(custom));
    c.provider = &run.opt->provider;
    c.session_id = run.out.id();
    c.max_tool_rounds = run.opt->max_tool_rounds;
    return c;
}

// True for the errors that mean "stopped", not "failed".
bool is_cancellation(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const Cancelled&) {
        return true;
    } catch (const async::RuntimeShutdownError&) {
        return true;
    } catch (const boost::system::system_error& se) {
        return se.code() == asio::error::operation_aborted;
    } catch (...) {
        return false;
    }
}

// Hands a record to the observer; what it throws is logged, not the run's business.
template <class Record>
void tell(LoopObserver* observer, void (LoopObserver::*fn)(const Record&), const Record& r) noexcept {
    if (!observer) return;
    try {
        (observer->*fn)(r);
    } catch (const std::exception& e) {
        log_warning(std::string("a loop observer threw: ") + e.what());
    } catch (...) {
        log_warning("a loop observer threw");
    }
}

// Closes a call's report scope when the call settled (or its frame went).
// (A constructor, not aggregate initialization: it is made in a coroutine body.)
struct ScopeCloser {
    explicit ScopeCloser(std::shared_ptr<detail::ToolCallScope> s) : scope(std::move(s)) {}
    ScopeCloser(const ScopeCloser&) = delete;
    ScopeCloser& operator=(const ScopeCloser&) = delete;
    std::shared_ptr<detail::ToolCallScope> scope;
    ~ScopeCloser() {
        if (scope) scope->close();
    }
};

// Settles one tool call from its dispatch, which was initiated (and took its lane
// place) before this awaits it. A failed dispatch becomes a tool_execution_exception
// row; a cancellation aborts the loop.
asio::awaitable<void> settle(asio::awaitable<std::string> dispatch, LoopToolCall& call, LoopObserver* observer,
                             std::shared_ptr<detail::ToolCallScope> scope) {
    ScopeCloser closer(std::move(scope));
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
        call.result = co_await std::move(dispatch);
    } catch (...) {
        failure = std::current_exception();
    }
    if (closer.scope) closer.scope->close();
    ToolCallRecord record{call.part->function.name, std::chrono::steady_clock::now() - t0, "ok"};
    if (failure) {
        if (is_cancellation(failure)) {
            record.outcome = "cancelled";
            tell(observer, &LoopObserver::on_tool_call, record);
            std::rethrow_exception(failure);
        }
        auto [msg, type] = tool::describe_exception(failure);
        log_warning("tool '" + call.part->function.name + "' raised " + msg);
        call.result = tool::failure_content("tool_execution_exception", msg, type);
        record.outcome = "error";
    }
    tell(observer, &LoopObserver::on_tool_call, record);
}

// One model call reported to the observer with its duration and usage.
asio::awaitable<void> observed_model_call(LoopExecutor& exec, LoopStep& step, const LoopOptions& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
        co_await exec.async_complete(step.request(), step.response());
    } catch (...) {
        failure = std::current_exception();
    }
    const std::string kind = opt.provider.kind();
    const std::string& model = step.request().model ? *step.request().model : opt.provider.model.value_or(std::string());
    ModelCallRecord record{kind, model, std::chrono::steady_clock::now() - t0, "ok"};
    if (failure)
        record.outcome = is_cancellation(failure) ? "cancelled" : "error";
    else if (const auto& u = step.response().usage) {
        record.prompt_tokens = u->prompt_tokens;
        record.completion_tokens = u->completion_tokens;
    }
    tell(opt.observer.get(), &LoopObserver::on_model_call, record);
    if (failure) std::rethrow_exception(failure);
}

// Not a coroutine without an observer: the executor's awaitable goes straight to the
// loop, so a parked run carries no extra frame.
asio::awaitable<void> call_model(LoopExecutor& exec, LoopStep& step, const LoopOptions& opt) {
    if (!opt.observer) return exec.async_complete(step.request(), step.response());
    return observed_model_call(exec, step, opt);
}

// Initiates one call's dispatch; an executor that throws instead of returning the
// awaitable fails that call, not the loop. With a report scope the tool is given a
// handle whose reports go to the run's on_event.
asio::awaitable<std::string> initiate(LoopExecutor& exec, const Session& out, LoopToolCall& c,
                                      const std::shared_ptr<detail::ToolCallScope>& scope) {
    return async::start_or_fail<std::string>([&] {
        return exec.async_dispatch_tool_call(scope ? detail::SessionAccess::for_tool_call(out, scope) : out,
                                             c.part ? c.part->id : std::string(), c.tool, std::move(c.arguments));
    });
}

// The report scope of one call (null when the run has no on_event).
std::shared_ptr<detail::ToolCallScope> scope_for(const std::shared_ptr<detail::ToolEventSink>& events,
                                                 const LoopToolCall& c) {
    if (!events) return nullptr;
    return std::make_shared<detail::ToolCallScope>(events, c.part ? c.part->function.name : c.tool->name(),
                                                   c.part ? c.part->id : std::string());
}

// One batch of a round: every dispatch is initiated in call order, then all are awaited
// together (the dispatcher's lanes order same-key calls; LoopStep keeps calls that are
// not parallel-safe in batches of their own).
asio::awaitable<void> dispatch_batch(async::Runtime& rt, LoopExecutor& exec, const Session& out,
                                     std::span<LoopToolCall> batch, LoopObserver* observer,
                                     const std::shared_ptr<detail::ToolEventSink>& events) {
    std::size_t runnable = 0;
    for (const auto& c : batch) runnable += !c.result;
    if (runnable == 1) {
        for (auto& c : batch)
            if (!c.result) {
                auto scope = scope_for(events, c);
                co_await settle(initiate(exec, out, c, scope), c, observer, scope);
            }
        co_return;
    }
    async::TaskGroup<void> group(rt);  // calls of different lanes in parallel across the runtime's threads
    for (auto& c : batch) {
        if (c.result) continue;
        auto scope = scope_for(events, c);
        auto dispatch = initiate(exec, out, c, scope);
        group.spawn(settle(std::move(dispatch), c, observer, std::move(scope)));
    }
    co_await group.async_join();
}

asio::awaitable<persistence::AsyncSessionWriter> open_writer(const LoopRun& run, bool record_llm) {
    const LoopOptions& opt = *run.opt;
    persistence::AsyncWriterOptions wo;
    wo.writer.record_llm = record_llm;
    if (opt.persist_path) wo.writer.path = *opt.persist_path;
    wo.writer.sandbox_handle_id = opt.sandbox_handle_id;
    wo.writer.created_at = opt.identity.created_at;
    wo.writer.closed_at = opt.identity.closed_at;
    wo.runtime = opt.runtime;
    co_return co_await persistence::AsyncSessionWriter::async_open(run.out, std::move(wo));
}

// Queues rows [from, end) on the session's writer, in order.
asio::awaitable<void> persist_rows(persistence::AsyncSessionWriter& writer, const ChunkTable& rows, std::size_t from) {
    for (std::size_t i = from; i < rows.size(); ++i) co_await writer.async_enqueue_chunk(i, rows[i]);
}

void note_truncated(const Session& out, int max_tool_rounds) {
    log_warning("run_session_loop hit max_tool_rounds=" + std::to_string(max_tool_rounds) +
                " without finish_reason in (stop, length, content_filter); last row may be a tool_result");
    out.add_lineage_extra("loop.truncated", true);
}

// Throws rath::Cancelled once the run was asked to stop. The task's terminal
// cancellation aborts what the loop awaits; this check also stops a run whose request
// came between two awaits (or before it started).
void stop_if_cancelled(const LoopRun& run) {
    if (auto why = run.done.cancel_reason())
        throw Cancelled("session " + run.out.id() + " was cancelled (" + to_string(*why) + ")", *why);
}

// What the reader of a failed run gets: a run that was asked to stop (or whose awaited
// operation was aborted) fails with rath::Cancelled, whatever error the abort surfaced
// as (an aborted socket may look like a connection error); other errors pass through.
std::exception_ptr reader_error(const LoopRun& run, std::exception_ptr failure) {
    if (auto why = run.done.cancel_reason()) {
        try {
            std::rethrow_exception(failure);
        } catch (const Cancelled& c) {
            if (c.reason() == *why) return failure;
        } catch (...) {
        }
        return std::make_exception_ptr(Cancelled("session " + run.out.id() + " was cancelled (" + to_string(*why) + ")", *why));
    }
    try {
        std::rethrow_exception(failure);
    } catch (const boost::system::system_error& e) {
        if (e.code() == asio::error::operation_aborted)
            return std::make_exception_ptr(Cancelled("session " + run.out.id() + " was cancelled (requested)"));
    } catch (...) {
    }
    return failure;
}

// Arms the run's deadline (LoopOptions::timeout): when it passes, the run is cancelled
// with CancelReason::deadline as if Session::cancel had been called. The timer goes
// with the loop's frame (its handler then sees operation_aborted and does nothing).
std::optional<asio::steady_timer> arm_deadline(const asio::any_io_executor& ex, const LoopRun& run) {
    if (!run.deadline) return std::nullopt;
    if (std::chrono::steady_clock::now() >= *run.deadline) {
        run.done.core()->note_cancel(CancelReason::deadline);
        stop_if_cancelled(run);
    }
    std::optional<asio::steady_timer> timer(std::in_place, ex, *run.deadline);
    timer->async_wait([done = run.done](const boost::system::error_code& ec) {
        if (!ec) done.cancel(CancelReason::deadline);
    });
    return timer;
}

// The loop (§2.3): waits for pending inputs on the runtime (chains never block their
// caller), then performs the step's actions until it finishes, and sets run->done.
asio::awaitable<void> loop_body(std::shared_ptr<LoopRun> run) {
    stop_if_cancelled(*run);
    std::optional<asio::steady_timer> deadline = arm_deadline(co_await asio::this_coro::executor, *run);
    // Checked first: awaiting a settled session would still cost a coroutine frame.
    if (run->user.pending()) co_await run->user.async_synchronize();
    if (run->agent.pending()) co_await run->agent.async_synchronize();

    const LoopOptions& opt = *run->opt;
    Prepared prep = prepare(*run);
    std::optional<persistence::AsyncSessionWriter> writer;
    const bool recording = prep.recorded != nullptr;
    if (opt.persist || opt.persist_path || recording) writer.emplace(co_await open_writer(*run, recording));

    async::Runtime& rt = opt.runtime ? *opt.runtime : async::Runtime::default_runtime();
    const ChunkTable agent_rows = detail::SessionAccess::raw_chunks(run->agent);
    std::optional<LoopStep> step;
    std::exception_ptr failure;
    try {
        LoopStepConfig config = step_config(*run, prep, agent_rows);
        if (recording) co_await writer->async_enqueue_recording(recording_config_line(*run, prep, config));
        step.emplace(std::move(config));
        for (bool more = true; more;) {
            stop_if_cancelled(*run);
            const LoopAction action = step->resume();
            if (action == LoopAction::call_model) {
                co_await call_model(*prep.exec, *step, opt);
                if (recording) co_await persist_recorded(*writer, *prep.recorded);
            } else if (action == LoopAction::dispatch_tools) {
                co_await dispatch_batch(rt, *prep.exec, run->out, step->tool_batch(), opt.observer.get(), prep.tool_events);
            } else if (action == LoopAction::publish_rows) {
                detail::SessionAccess::publish(run->out, step->rows(), step->usage());
                if (writer) co_await persist_rows(*writer, step->rows(), step->published());
            } else {
                more = false;
            }
        }
        if (step->truncated()) note_truncated(run->out, opt.max_tool_rounds);
    } catch (...) {
        failure = std::current_exception();
    }
    if (failure) {
        failure = reader_error(*run, std::move(failure));
        // Usage a failed round counted (a budget callback that threw) stays visible;
        // rows were published as they came. Cancellation or an error: keep the partial
        // file (no trailer), then rethrow. A cancelled coroutine would fail every
        // further await at once: the cleanup runs with a fresh cancellation state (the
        // task's signal is emitted only once).
        if (step) detail::SessionAccess::publish_usage(run->out, step->usage());
        deadline.reset();
        co_await asio::this_coro::reset_cancellation_state();
        if (writer) {
            try {
                co_await writer->async_abandon();
            } catch (const std::exception& e) {
                log_warning(std::string("abandoning the session writer failed: ") + e.what());
            }
        }
        std::rethrow_exception(failure);
    }
    if (writer) co_await writer->async_close();
    session_registry().set_active(run->out);
    run->done.set_value();
}

// §2.1 steps 2–5: the output session, built eagerly on the caller's thread, and the
// registry entries (user, agent, out; out active).
Session make_output(const Session& user, const Session& agent, const std::optional<std::string>& id) {
    // A pending user session contributes its rows when the loop has waited for it.
    Session out = detail::make_operator_output(
        user, agent, user.pending() ? ChunkTable{} : detail::SessionAccess::raw_chunks(user), "run_session_loop",
        LineageKind::op_session_loop, {}, id);
    detail::register_operator_sessions(user, agent, out);
    return out;
}

std::shared_ptr<LoopRun> start_run(const Session& user, const Session& agent, std::shared_ptr<const LoopOptions> options) {
    // The id names the persisted file: anything but a UUID could name another path.
    if (const auto& id = options->identity.session_id; id && detail::canonical_uuid(*id) != *id)
        throw std::invalid_argument("run_session_loop: LoopOptions::identity.session_id is not a lowercase "
                                    "8-4-4-4-12 UUID: \"" + *id + "\"");
    if (auto bound = detail::session_provider_for(options->provider, user, options->executor || options->client,
                                                  "run_session_loop")) {
        auto copy = std::make_shared<LoopOptions>(*options);
        copy->provider = std::move(*bound);
        options = std::move(copy);
    }
    Session out = make_output(user, agent, options->identity.session_id);
    for (const auto& kv : options->lineage_extras) out.add_lineage_extra(std::string(kv.key()), kv.value());
    auto run = std::make_shared<LoopRun>(LoopRun{out, user, agent, std::move(options)});
    if (run->opt->timeout) run->deadline = std::chrono::steady_clock::now() + *run->opt->timeout;
    detail::SessionAccess::set_pending(out, run->done);
    return run;
}

}  // namespace

LoopExecutor::~LoopExecutor() = default;

namespace {
asio::awaitable<std::string> content_of(asio::awaitable<tool::ToolDispatchResult> dispatch) {
    auto r = co_await std::move(dispatch);
    co_return std::move(r.content);
}
}  // namespace

// Not a coroutine: the dispatcher takes the call's lane place now, when the loop
// initiates the call.
asio::awaitable<std::string> LoopExecutor::do_dispatch_tool(Session out, tool::FlowToolPtr tool, json::object arguments) {
    // On the runtime the loop runs on (LoopOptions::runtime): its lanes and its blocking
    // pool, not the default runtime's.
    return content_of(tool::async_dispatch_flow_tool(std::move(out), std::move(tool), std::move(arguments),
                                                     async::current_runtime()));
}

Session run_session_loop(const Session& user, const Session& agent, LoopOptions options) {
    return run_session_loop(user, agent, std::make_shared<const LoopOptions>(std::move(options)));
}

Session run_session_loop(const Session& user, const Session& agent, std::shared_ptr<const LoopOptions> options) {
    if (!options) throw std::invalid_argument("run_session_loop: null options");
    async::Runtime& rt = options->runtime ? *options->runtime : async::Runtime::default_runtime();
    auto run = start_run(user, agent, std::move(options));
    Session out = run->out;
    const bool lazy = run->opt->lazy;
    if (run->opt->admission)
        rt.submit_into(run->opt->admission, [run] { return loop_body(run); }, run->done);
    else
        rt.submit_into(loop_body(run), run->done);
    if (!lazy) out.synchronize();
    return out;
}

asio::awaitable<Session> async_run_session_loop(Session user, Session agent, LoopOptions options) {
    auto shared = std::make_shared<const LoopOptions>(std::move(options));
    co_return co_await async_run_session_loop(std::move(user), std::move(agent), std::move(shared));
}

asio::awaitable<Session> async_run_session_loop(Session user, Session agent, std::shared_ptr<const LoopOptions> options) {
    if (!options) throw std::invalid_argument("async_run_session_loop: null options");
    auto run = start_run(user, agent, std::move(options));
    try {
        co_await loop_body(run);
    } catch (...) {
        run->done.set_exception(std::current_exception());
    }
    run->out.synchronize();  // finished: never waits; rethrows the loop's error, once
    co_return run->out;
}

}  // namespace rath
