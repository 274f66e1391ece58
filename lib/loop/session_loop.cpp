// The agent loop (session.md §2.1–§2.10) as one coroutine per output session.
#include <rath/session_loop.hpp>
#include <rath/async/detail/immortal.hpp>

#include <rath/async/block_on.hpp>
#include <rath/async/task_group.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/usage.hpp>
#include <rath/log.hpp>
#include <rath/session/messages.hpp>
#include <rath/session/persistence/async_writer.hpp>
#include <rath/session/registry.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/serialize.hpp>
#include <rath/tool/tool_table.hpp>

#include "lib/text/pyjson.hpp"
#include "lib/loop/operator_output.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>

namespace rath {

namespace json = boost::json;
namespace asio = boost::asio;

namespace {

void log_warning(const std::string& msg) { rath::log(LogLevel::warning, "rath.session.loop", msg); }

// {"ok": false, "error_kind": K, "message": M[, "detail": D[:4000]]} in pyjson_ascii.
std::string error_payload(std::string_view kind, std::string_view message, std::optional<std::string> detail = {}) {
    json::object o;
    o["ok"] = false;
    o["error_kind"] = kind;
    o["message"] = message;
    if (detail && !detail->empty()) {
        if (detail->size() > 4000) detail->resize(4000);
        o["detail"] = *detail;
    }
    return detail::pyjson_ascii(o);
}

std::string truncate_detail(const std::string& raw) {
    if (raw.size() <= 2000) return raw;
    return raw.substr(0, 2000) + "...(truncated)";
}

class DefaultExecutor final : public LoopExecutor {
public:
    DefaultExecutor(std::shared_ptr<llm::ChatClient> client, StreamCallback on_event)
        : client_(std::move(client)), on_event_(std::move(on_event)) {}

    // Not a coroutine: the client's awaitable is handed straight to the loop, so a
    // parked session carries no extra frame here.
    asio::awaitable<llm::ChatResponse> async_complete(llm::ChatRequest request) override {
        return async_complete_borrowed(request);
    }
    asio::awaitable<llm::ChatResponse> async_complete_borrowed(const llm::ChatRequest& request) override {
        if (!on_event_) return client_->async_complete_borrowed(request);
        require_streaming();
        return client_->async_stream_borrowed(request, on_event_);
    }
    asio::awaitable<void> async_complete_into(const llm::ChatRequest& request, llm::ChatResponse& out) override {
        if (!on_event_) return client_->async_complete_into(request, out);
        require_streaming();
        return client_->async_stream_into(request, on_event_, out);
    }

private:
    void require_streaming() const {
        if (!client_->supports_streaming())
            throw ProviderConfigError("on_event requires an async streaming client; provider_kind='" +
                                      std::string(client_->kind()) + "' does not expose async_stream");
    }

    std::shared_ptr<llm::ChatClient> client_;
    StreamCallback on_event_;
};

struct Call {
    llm::ToolCallPart* part;  // its parsed arguments are moved into `args`
    std::shared_ptr<tool::FlowToolCall> tool;
    json::object args;
    std::optional<std::string> body;  // set in phase A (errors) or phase B (results)
};

struct LoopState {
    Session out;
    Session user;
    Session agent;
    std::shared_ptr<const LoopOptions> opt;  // shared by every session of an Agent
    // Set by the loop itself at the end: the coroutines then carry no copy of the
    // result type while the session is parked.
    async::Lazy<MaterializedSession> result{};
};

// Phase B: one queue per resource key, queues in parallel, calls in a queue in order.
// `queue` is borrowed from dispatch_round's frame, which awaits every queue.
asio::awaitable<void> run_queue(LoopExecutor* exec, Session out, std::span<Call* const> queue) {
    for (Call* c : queue) {
        try {
            c->body = co_await exec->async_dispatch_tool(out, c->tool, std::move(c->args));  // each call runs once
        } catch (const boost::system::system_error& e) {
            if (e.code() == asio::error::operation_aborted) throw;  // cancellation aborts the loop
            auto [msg, type] = tool::describe_exception(std::current_exception());
            c->body = error_payload("tool_execution_exception", msg, type);
        } catch (...) {
            auto [msg, type] = tool::describe_exception(std::current_exception());
            log_warning("tool '" + c->part->function.name + "' raised " + msg);
            c->body = error_payload("tool_execution_exception", msg, type);
        }
    }
}

asio::awaitable<void> dispatch_round(async::Runtime& rt, LoopExecutor* exec, const tool::ToolTable& table,
                                     const Session& out,
                                     std::vector<llm::ToolCallPart>& calls,
                                     std::vector<std::string>& bodies) {
    std::vector<Call> cs;
    cs.reserve(calls.size());
    std::vector<std::pair<std::string, std::vector<Call*>>> queues;  // first-appearance order
    std::map<std::string, std::size_t> queue_index;
    Call* only = nullptr;  // the one runnable call of a round that asks for one (no queues to build)
    for (auto& part : calls) cs.push_back(Call{&part, nullptr, {}, std::nullopt});
    for (auto& c : cs) {
        auto& fn = c.part->function;
        // 1. invalid arguments (checked before the unknown-tool check)
        if (!fn.arguments_parsed || fn.arguments_parse_error) {
            std::optional<std::string> detail;
            if (!fn.arguments.empty()) detail = truncate_detail(fn.arguments);
            c.body = error_payload("invalid_tool_arguments",
                                   "tool " + detail::pyrepr(fn.name) + " returned non-JSON or unparseable arguments",
                                   detail);
            continue;
        }
        // 2. unknown tool
        c.tool = table.find(fn.name);
        if (!c.tool) {
            c.body = error_payload("unknown_tool", "unknown tool " + detail::pyrepr(fn.name));
            continue;
        }
        c.args = std::move(*fn.arguments_parsed);  // the response is the loop's own: no copy
        // 3. resource key (a throwing key means the body never runs)
        std::string key;
        try {
            for (auto& part : c.tool->resource_key(c.args)) {
                key += part;
                key += '\x1f';  // unit separator: ("a","b") and ("ab") stay distinct
            }
        } catch (...) {
            auto [msg, type] = tool::describe_exception(std::current_exception());
            log_warning("resource_key of tool '" + fn.name + "' raised " + msg);
            c.body = error_payload("tool_execution_exception", msg, type);
            continue;
        }
        if (cs.size() == 1) {
            only = &c;
            continue;
        }
        auto [it, inserted] = queue_index.emplace(key, queues.size());
        if (inserted) queues.emplace_back(key, std::vector<Call*>{});
        queues[it->second].second.push_back(&c);
    }
    if (only) {
        co_await run_queue(exec, out, std::span<Call* const>(&only, 1));
    } else if (queues.size() == 1) {
        co_await run_queue(exec, out, queues[0].second);
    } else if (!queues.empty()) {
        async::TaskGroup<void> group(rt);  // queues in parallel across the runtime's threads
        for (auto& [key, q] : queues) group.spawn(run_queue(exec, out, q));
        co_await group.async_join();
    }
    // Phase C: bodies in call order, never completion order.
    bodies.clear();
    for (auto& c : cs)
        bodies.push_back(c.body ? std::move(*c.body)
                                : std::string(R"({"ok": false, "error_kind": "internal_missing_result", )"
                                              R"("message": "tool result missing after dispatch"})"));
}

// The merged tool table of a loop (built-ins + the caller's tools) and its schemas as
// one shared list, so that every session of an agent uses the same table and sends the
// same ToolList (its wire encoding is then built once, not per request). Keyed by the
// identity of the caller's tools (the built-ins never change); a tool's name,
// description and parameters are read when its table is first built. Entries whose
// tools are gone are dropped; at most 64 are kept. A name conflict is not cached: it
// throws on every run, as merge_tools_for_loop does.
struct LoopTools {
    tool::ToolTable table;
    llm::ToolList schemas;
};

std::shared_ptr<const LoopTools> shared_loop_tools(const std::vector<std::shared_ptr<tool::FlowToolCall>>& user_tools) {
    struct Entry {
        std::vector<std::weak_ptr<tool::FlowToolCall>> tools;
        std::vector<const tool::FlowToolCall*> ids;
        std::shared_ptr<const LoopTools> value;
    };
    static std::mutex mu;
    static async::detail::Immortal<std::vector<Entry>> cache_storage;
    auto& cache = *cache_storage;
    {
        std::lock_guard lk(mu);
        std::erase_if(cache, [](const Entry& e) {
            return std::any_of(e.tools.begin(), e.tools.end(), [](const auto& w) { return w.expired(); });
        });
        for (const auto& e : cache)
            if (std::equal(e.ids.begin(), e.ids.end(), user_tools.begin(), user_tools.end(),
                           [](const tool::FlowToolCall* id, const auto& t) { return id == t.get(); }))
                return e.value;
    }
    auto table = tool::merge_tools_for_loop(user_tools);  // may throw ToolNameConflictError
    auto schemas = llm::ToolList(tool::tools_to_schemas(table));
    Entry e{{}, {}, std::make_shared<const LoopTools>(LoopTools{std::move(table), std::move(schemas)})};
    for (const auto& t : user_tools) {
        e.tools.push_back(t);
        e.ids.push_back(t.get());
    }
    std::lock_guard lk(mu);
    if (cache.size() >= 64) cache.erase(cache.begin());
    cache.push_back(e);
    return e.value;
}

// The agent session's rows as messages, converted once per agent session rather than
// per loop: every session of an Agent starts from the same agent table. Keyed by table
// identity (the cache holds the table, so an address is never reused while cached);
// at most 64 kept.
std::shared_ptr<const std::vector<llm::Message>> shared_head(const ChunkTable& agent_rows) {
    using Head = std::shared_ptr<const std::vector<llm::Message>>;
    static std::mutex mu;
    static async::detail::Immortal<std::vector<std::pair<ChunkTable, Head>>> cache_storage;
    auto& cache = *cache_storage;
    {
        std::lock_guard lk(mu);
        for (const auto& [table, head] : cache)
            if (table.same_as(agent_rows)) return head;
    }
    Head head = std::make_shared<const std::vector<llm::Message>>(chunk_table_to_messages(agent_rows));
    std::lock_guard lk(mu);
    if (cache.size() >= 64) cache.erase(cache.begin());
    cache.emplace_back(agent_rows, head);
    return head;
}

// One round's request (agent rows, then the conversation) handed to the executor,
// which writes the answer into `out`. The conversation is lent to the request for the
// call and moved back afterwards, thrown or not: the executor borrows the request only
// until it returns.
asio::awaitable<void> start_round(LoopExecutor& exec, const std::vector<llm::Message>& head,
                                  std::vector<llm::Message>& convo, const llm::ToolList& schemas,
                                  const llm::Provider& provider, llm::ChatResponse& out) {
    llm::ChatRequest req = make_chat_request({}, schemas, provider, "auto");
    req.messages.reserve(head.size() + convo.size());
    req.messages.insert(req.messages.end(), head.begin(), head.end());
    req.messages.insert(req.messages.end(), std::make_move_iterator(convo.begin()),
                        std::make_move_iterator(convo.end()));
    struct GiveBack {
        std::vector<llm::Message>& convo;
        std::vector<llm::Message>& lent;
        std::size_t head;
        ~GiveBack() {
            for (std::size_t i = 0; i < convo.size(); ++i) convo[i] = std::move(lent[head + i]);
        }
    } give_back{convo, req.messages, head.size()};
    return exec.async_complete_into(req, out);
}

// Fires once, on the first crossing of the cap (§2.7).
void check_budget(const Session& out, const llm::Provider& provider, std::int64_t prev,
                  const llm::TokenUsage& cumulative) {
    if (!provider.budget_total_tokens) return;
    std::int64_t cap = *provider.budget_total_tokens;
    if (cumulative.total_tokens > cap && prev <= cap) {
        if (provider.on_budget_exceeded) {
            provider.on_budget_exceeded(out.id(), cumulative);  // may throw: aborts the loop
        } else {
            log_warning("session " + out.id() + " exceeded budget_total_tokens=" + std::to_string(cap) +
                        " (cumulative=" + std::to_string(cumulative.total_tokens) + "); no callback configured");
        }
    }
}

// What a loop keeps between rounds. Built and updated by plain functions, so that
// their temporaries never take a slot in the loop's coroutine frame, which lives as
// long as the session (GCC keeps every local and await temporary of a coroutine in
// its frame for the frame's whole life).
struct LoopRun {
    std::shared_ptr<const LoopTools> tools;
    std::shared_ptr<LoopExecutor> exec;
    llm::ToolList schemas;
    std::shared_ptr<const std::vector<llm::Message>> head;
    ChunkTable rows;
    std::vector<llm::Message> convo;
    std::vector<std::string> bodies;
};

LoopRun prepare_run(const LoopState& st) {
    const LoopOptions& opt = *st.opt;
    LoopRun run;
    run.tools = shared_loop_tools(opt.tools);  // may throw ToolNameConflictError
    run.exec = opt.executor;
    if (run.exec && opt.on_event)
        throw std::invalid_argument(
            "on_event with a custom executor is not supported; wire streaming inside your executor's "
            "async_complete instead.");
    if (!run.exec) {
        std::shared_ptr<llm::ChatClient> client = opt.client ? opt.client : llm::chat_client_for(opt.provider);
        run.exec = std::make_shared<DefaultExecutor>(std::move(client), opt.on_event);
    }
    run.rows = st.user.raw_chunks();
    st.out.set_raw_chunks(run.rows);
    return run;
}

// The parts of a run that may throw a loop error (custom schemas, the conversation):
// called inside the loop's try block, like the code they came from.
void prepare_messages(LoopRun& run, const LoopState& st) {
    std::vector<llm::FunctionTool> custom_schemas = run.exec->tool_schemas();
    run.schemas = custom_schemas.empty() ? run.tools->schemas : llm::ToolList(std::move(custom_schemas));
    run.head = shared_head(st.agent.raw_chunks());
    run.convo = chunk_table_to_messages(run.rows);
}

void append_row(LoopRun& run, const Session& out, ChunkRowPtr row) {
    run.rows = run.rows.append(row);
    out.set_raw_chunks(run.rows);  // a new table object per append (§2.8 identity)
    run.convo.push_back(chunk_row_to_message(*row, run.rows.size() - 1));
}

void absorb_usage(const Session& out, const llm::Provider& provider, const std::optional<llm::TokenUsage>& usage) {
    if (!usage) return;
    auto prev_usage = out.raw_usage();
    std::int64_t prev = prev_usage ? prev_usage->total_tokens : 0;
    auto cumulative = llm::add_usage(prev_usage, usage);
    out.set_raw_usage(cumulative);
    check_budget(out, provider, prev, *cumulative);
}

// The assistant row of a round; true when it asks for tools.
bool append_assistant_turn(LoopRun& run, const Session& out, const llm::AssistantMessage& msg) {
    std::optional<std::string_view> content;
    if (msg.content) content = *msg.content;
    if (!msg.tool_calls || msg.tool_calls->empty()) {
        append_row(run, out, assistant_turn_chunk_from({}, content));
        return false;
    }
    std::vector<ToolCallFields> calls;  // borrowed: the row is the first copy of each call
    calls.reserve(msg.tool_calls->size());
    for (auto& tc : *msg.tool_calls) calls.push_back({tc.id, tc.function.name, tc.function.arguments, tc.type});
    append_row(run, out, assistant_turn_chunk_from(calls, content));
    return true;
}

void append_tool_results(LoopRun& run, const Session& out, const std::vector<llm::ToolCallPart>& calls) {
    for (std::size_t i = 0; i < run.bodies.size(); ++i)
        append_row(run, out, tool_feedback_chunk(calls[i].id, calls[i].function.name, std::move(run.bodies[i])));
}

void note_truncated(const Session& out, int max_tool_rounds) {
    log_warning("run_session_loop hit max_tool_rounds=" + std::to_string(max_tool_rounds) +
                " without finish_reason in (stop, length, content_filter); last row may be a tool_result");
    out.add_lineage_extra("loop.truncated", true);
}

asio::awaitable<persistence::AsyncSessionWriter> open_writer(const LoopState& st) {
    const LoopOptions& opt = *st.opt;
    persistence::AsyncWriterOptions wo;
    if (opt.persist_path) wo.writer.path = *opt.persist_path;
    wo.writer.sandbox_handle_id = opt.sandbox_handle_id;
    wo.runtime = opt.runtime;
    co_return co_await persistence::AsyncSessionWriter::async_open(st.out, std::move(wo));
}

// Queues rows [from, end) on the session's writer, in order. `rows` is the loop's own
// table, which does not change while this runs (no copy of it in the loop's frame).
asio::awaitable<void> persist_rows(persistence::AsyncSessionWriter& writer, const ChunkTable& rows, std::size_t from) {
    for (std::size_t i = from; i < rows.size(); ++i) co_await writer.async_enqueue_chunk(i, rows[i]);
}

MaterializedSession finish_run(const LoopRun& run, const Session& out) {
    session_registry().set_active(out);
    return MaterializedSession{run.rows, out.raw_usage()};
}

// The loop body (§2.3). Runs on the output session's own strand; publishes its
// result into st->result.
asio::awaitable<void> loop_body(std::shared_ptr<LoopState> st) {
    // Inputs may themselves be pending loop outputs: wait for them here, on the
    // runtime, so that chaining never blocks the caller.
    // (Checked first: awaiting a settled session would still cost a coroutine frame.)
    if (st->user.pending()) co_await st->user.async_synchronize();
    if (st->agent.pending()) co_await st->agent.async_synchronize();

    const LoopOptions& opt = *st->opt;
    LoopRun run = prepare_run(*st);
    std::optional<persistence::AsyncSessionWriter> writer;
    if (opt.persist || opt.persist_path) writer.emplace(co_await open_writer(*st));

    std::exception_ptr failure;
    try {
        if (writer) co_await persist_rows(*writer, run.rows, 0);
        prepare_messages(run, *st);
        bool finished = false;
        llm::ChatResponse resp;  // each round's answer, written in place by the executor
        for (int round = 0; round < opt.max_tool_rounds && !finished; ++round) {
            // The request is built by a plain function: it never occupies this frame.
            co_await start_round(*run.exec, *run.head, run.convo, run.schemas, opt.provider, resp);
            absorb_usage(st->out, opt.provider, resp.usage);
            const llm::ChatChoice& choice = resp.primary_choice();
            std::size_t mark = run.rows.size();
            const bool wants_tools = append_assistant_turn(run, st->out, choice.message);
            if (writer) co_await persist_rows(*writer, run.rows, mark);
            if (!wants_tools) {
                finished = llm::is_final_answer(choice.finish_reason);
                continue;
            }
            async::Runtime& rt = opt.runtime ? *opt.runtime : async::Runtime::default_runtime();
            // The response is ours: the calls' parsed arguments move into the dispatch.
            std::vector<llm::ToolCallPart>& calls = *resp.choices.front().message.tool_calls;
            co_await dispatch_round(rt, run.exec.get(), run.tools->table, st->out, calls, run.bodies);
            mark = run.rows.size();
            append_tool_results(run, st->out, calls);
            if (writer) co_await persist_rows(*writer, run.rows, mark);
        }
        if (!finished) note_truncated(st->out, opt.max_tool_rounds);
    } catch (...) {
        failure = std::current_exception();
    }
    if (failure) {
        // Cancellation or an error: keep the partial file (no trailer), then rethrow.
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
    st->result.set_value(finish_run(run, st->out));
}

// §2.1 steps 2–5: the output session, built eagerly on the caller's thread, and the
// registry entries (user, agent, out; out active).
Session make_output(const Session& user, const Session& agent) {
    // A pending user session contributes its rows when the loop has waited for it.
    Session out = detail::make_operator_output(user, agent, user.pending() ? ChunkTable{} : user.raw_chunks(),
                                               "run_session_loop", LineageKind::op_session_loop);
    detail::register_operator_sessions(user, agent, out);
    return out;
}

}  // namespace

asio::awaitable<void> LoopExecutor::async_complete_into(const llm::ChatRequest& request, llm::ChatResponse& out) {
    return llm::detail::async_assign(async_complete_borrowed(request), out);  // started while `request` lives
}

asio::awaitable<std::string> LoopExecutor::async_dispatch_tool(Session out, std::shared_ptr<tool::FlowToolCall> tool,
                                                               json::object arguments) {
    auto r = co_await tool::async_dispatch_flow_tool(std::move(out), std::move(tool), std::move(arguments));
    co_return std::move(r.content);
}

llm::ChatRequest make_chat_request(std::vector<llm::Message> messages, std::optional<llm::ToolList> tools,
                                   const llm::Provider& provider, std::optional<std::string> default_tool_choice) {
    llm::ChatRequest req;
    req.messages = std::move(messages);
    req.tools = std::move(tools);
    provider.apply_to(req);
    if (!req.tool_choice && default_tool_choice) req.tool_choice = json::value(*default_tool_choice);
    return req;
}

Session run_session_loop(const Session& user, const Session& agent, LoopOptions options) {
    return run_session_loop(user, agent, std::make_shared<const LoopOptions>(std::move(options)));
}

Session run_session_loop(const Session& user, const Session& agent, std::shared_ptr<const LoopOptions> options) {
    if (!options) throw std::invalid_argument("run_session_loop: null options");
    async::Runtime& rt = options->runtime ? *options->runtime : async::Runtime::default_runtime();
    Session out = make_output(user, agent);
    const bool lazy = options->lazy;
    auto st = std::make_shared<LoopState>(LoopState{out, user, agent, std::move(options)});
    if (st->opt->admission)
        rt.submit_into(st->opt->admission, [st] { return loop_body(st); }, st->result);
    else
        rt.submit_into(loop_body(st), st->result);
    out.set_pending(st->result);
    if (!lazy) out.synchronize();
    return out;
}

asio::awaitable<Session> async_run_session_loop(Session user, Session agent, LoopOptions options) {
    auto shared = std::make_shared<const LoopOptions>(std::move(options));
    co_return co_await async_run_session_loop(std::move(user), std::move(agent), std::move(shared));
}

asio::awaitable<Session> async_run_session_loop(Session user, Session agent, std::shared_ptr<const LoopOptions> options) {
    if (!options) throw std::invalid_argument("async_run_session_loop: null options");
    Session out = make_output(user, agent);
    auto st = std::make_shared<LoopState>(LoopState{out, user, agent, std::move(options)});
    co_await loop_body(st);
    const MaterializedSession& m = st->result.get();  // set: never waits
    out.set_raw_chunks(m.chunks);
    out.set_raw_usage(m.usage);
    co_return out;
}

}  // namespace rath
