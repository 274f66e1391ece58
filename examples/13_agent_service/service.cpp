#include "service.hpp"

#include <rath/async/lazy.hpp>
#include <rath/backend/backend.hpp>
#include <rath/config/store.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/registry.hpp>
#include <rath/log.hpp>
#include <rath/loop/observer.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/memory/local.hpp>
#include <rath/memory/spec.hpp>
#include <rath/memory/store.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/ops_stats.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/session/registry.hpp>
#include <rath/session/trace_context.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <simdjson.h>

#include <cctype>
#include <fstream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace service {

namespace asio = boost::asio;
namespace json = boost::json;
using rath::net::HttpHeader;
using rath::net::ServerExchange;
using rath::net::ServerRequest;

// ---------------------------------------------------------------- configuration

namespace {

TenantLimits tenant_limits(const json::value& v, TenantLimits base) {
    if (!v.is_object()) return base;
    const auto& o = v.as_object();
    if (auto* p = o.if_contains("max_concurrent_runs")) base.max_concurrent_runs = p->to_number<std::size_t>();
    if (auto* p = o.if_contains("token_budget")) base.token_budget = p->to_number<std::int64_t>();
    return base;
}

template <class T>
void take(const json::object& o, const char* key, T& out) {
    if (auto* p = o.if_contains(key)) {
        if constexpr (std::is_same_v<T, std::string>)
            out = std::string(p->as_string());
        else
            out = p->to_number<T>();
    }
}

}  // namespace

Config load_config(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the config file " + path.string());
    std::stringstream text;
    text << in.rdbuf();
    Config c;
    c.config_path = path;
    try {
        const json::value doc = json::parse(text.str());
        const auto& root = doc.as_object();
        if (auto* l = root.if_contains("listen")) {
            take(l->as_object(), "host", c.host);
            std::size_t port = c.port;
            take(l->as_object(), "port", port);
            c.port = static_cast<std::uint16_t>(port);
            take(l->as_object(), "max_connections", c.http_max_connections);
        }
        if (auto* p = root.if_contains("provider")) {
            const auto& o = p->as_object();
            std::string s;
            if (o.contains("kind")) c.provider.provider_kind = std::string(o.at("kind").as_string());
            if (o.contains("base_url")) c.provider.base_url = std::string(o.at("base_url").as_string());
            if (o.contains("api_key")) c.provider.api_key = std::string(o.at("api_key").as_string());
            if (o.contains("model")) c.provider.model = std::string(o.at("model").as_string());
            take(o, "max_connections", c.llm_max_connections);
        }
        if (auto* a = root.if_contains("agent")) {
            take(a->as_object(), "system_prompt", c.system_prompt);
            take(a->as_object(), "max_tool_rounds", c.max_tool_rounds);
            if (auto* m = a->as_object().if_contains("mcp"))
                for (const auto& name : m->as_array()) c.mcp_servers.emplace_back(name.as_string());
        }
        if (auto* l = root.if_contains("limits")) {
            const auto& o = l->as_object();
            take(o, "max_concurrent_runs", c.max_concurrent_runs);
            take(o, "max_queued_runs", c.max_queued_runs);
            long long ms = c.run_timeout.count();
            take(o, "run_timeout_ms", ms);
            c.run_timeout = std::chrono::milliseconds(ms);
            take(o, "retry_after_seconds", c.retry_after_seconds);
            take(o, "max_message_bytes", c.max_message_bytes);
            take(o, "recent_runs", c.recent_runs);
        }
        if (auto* t = root.if_contains("tenants")) {
            const auto& o = t->as_object();
            take(o, "header", c.tenant_header);
            take(o, "max_tenants", c.max_tenants);
            if (auto* d = o.if_contains("default")) c.default_tenant = tenant_limits(*d, c.default_tenant);
            if (auto* each = o.if_contains("overrides"))
                for (const auto& kv : each->as_object())
                    c.tenants[std::string(kv.key())] = tenant_limits(kv.value(), c.default_tenant);
        }
        if (auto* p = root.if_contains("persist_dir"); p && p->is_string()) c.persist_dir = std::string(p->as_string());
        if (auto* m = root.if_contains("memory"); m && m->is_object()) {
            if (auto* p = m->as_object().if_contains("path"); p && p->is_string()) c.memory_path = std::string(p->as_string());
            take(m->as_object(), "recall_top_k", c.memory_recall_top_k);
        }
        if (auto* s = root.if_contains("shutdown")) {
            long long ms = c.shutdown_deadline.count();
            take(s->as_object(), "deadline_ms", ms);
            c.shutdown_deadline = std::chrono::milliseconds(ms);
        }
    } catch (const std::exception& e) {
        throw std::runtime_error(path.string() + ": " + e.what());
    }
    if (c.max_concurrent_runs == 0) throw std::runtime_error(path.string() + ": limits.max_concurrent_runs must be > 0");
    return c;
}

// ---------------------------------------------------------------- runs and tenants

struct Service::Tenant {
    std::string id;
    TenantLimits limits;
    std::atomic<std::size_t> active{0};
    std::atomic<std::int64_t> tokens{0};
};

// Streamed deltas on their way from the loop (any runtime thread) to the handler that
// writes them: appended under a lock, with a one-slot channel as the doorbell.
struct Pipe {
    using Bell = asio::experimental::concurrent_channel<void(boost::system::error_code)>;
    explicit Pipe(const asio::any_io_executor& ex) : bell(ex, 1) {}
    void push(std::string_view event) {
        {
            std::lock_guard lk(mu);
            buffer.append(event);
        }
        (void)bell.try_send(boost::system::error_code{});
    }
    void close() {
        {
            std::lock_guard lk(mu);
            closed = true;
        }
        (void)bell.try_send(boost::system::error_code{});
    }
    std::mutex mu;
    std::string buffer;
    bool closed = false;
    Bell bell;
};

struct Service::Run {
    rath::Session out;
    std::shared_ptr<Tenant> tenant;
    std::string traceparent;
    bool stream = false;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::shared_ptr<Pipe> pipe;  // stream only
    std::atomic<int> model_calls{0};
    std::atomic<int> tool_calls{0};
    std::atomic<std::int64_t> prompt_tokens{0}, completion_tokens{0};
    // Set by finish(): what the handler answers with.
    std::string outcome;  // ok, error, cancelled, deadline, shutdown, tenant_budget
    std::string answer;
    std::string error;
    rath::async::Lazy<void> finished;
};

namespace {

// Counts a run's calls and tokens into the service's metrics and its tenant's budget.
class RunObserver final : public rath::LoopObserver {
public:
    RunObserver(Metrics& m, std::shared_ptr<Service::Run> run) : m_(m), run_(std::move(run)) {}
    void on_model_call(const rath::ModelCallRecord& r) override {
        const std::string kind(r.provider_kind), model(r.model);
        m_.llm_latency.observe({kind, model, std::string(r.outcome)}, std::chrono::duration<double>(r.duration).count());
        if (r.prompt_tokens) m_.llm_tokens.add({kind, model, "in"}, static_cast<double>(r.prompt_tokens));
        if (r.completion_tokens) m_.llm_tokens.add({kind, model, "out"}, static_cast<double>(r.completion_tokens));
        if (auto run = run_.lock()) {
            ++run->model_calls;
            run->prompt_tokens += r.prompt_tokens;
            run->completion_tokens += r.completion_tokens;
            run->tenant->tokens += r.prompt_tokens + r.completion_tokens;
        }
    }
    void on_tool_call(const rath::ToolCallRecord& r) override {
        m_.tool_calls.add({std::string(r.name), std::string(r.outcome)});
        if (auto run = run_.lock()) ++run->tool_calls;
    }

private:
    Metrics& m_;
    std::weak_ptr<Service::Run> run_;  // the run owns its options, which own this
};

struct WordCountArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(WordCountArgs, (), (text))

// The peers' fan-out tool: whitespace-separated words, in process.
rath::tool::FlowToolPtr word_count_tool() {
    return rath::tool::make_tool<WordCountArgs>(
        "word_count", "Count the whitespace-separated words in a text.",
        [](rath::Session, WordCountArgs a) -> asio::awaitable<json::value> {
            long n = 0;
            bool in_word = false;
            for (unsigned char c : a.text) {
                const bool space = std::isspace(c) != 0;
                if (!space && !in_word) ++n;
                in_word = !space;
            }
            co_return json::value(n);
        },
        {.parallel_safe = true, .blocking = false});
}

bool valid_run_id(std::string_view id) {
    if (id.empty() || id.size() > 64) return false;
    for (char c : id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    return true;
}

std::vector<HttpHeader> json_headers() { return {{"Content-Type", "application/json"}}; }

// A JSON answer. Not a coroutine: the header list is built here, outside any co_await
// expression of the caller's frame.
asio::awaitable<void> reply(ServerExchange& ex, int status, std::string body) {
    return ex.respond(status, json_headers(), std::move(body));
}

std::string error_body(std::string_view message) {
    json::object o;
    o["error"] = json::string(message);
    return json::serialize(o);
}

json::array transcript_json(const rath::ChunkTable& rows) {
    json::array a;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        json::object o = rows[i]->payload();
        o["kind"] = json::string(rath::to_string(rows[i]->kind()));
        a.push_back(std::move(o));
    }
    return a;
}

// What a run's persisted file says, as a JSON object text ("" when there is none):
// status (completed / incomplete), usage, persisted, transcript, lineage_extras.
// Blocking file I/O: call it on the blocking pool.
std::string persisted_json(const std::filesystem::path& dir, const std::string& id) {
    const auto final_path = dir / (id + ".jsonl");
    const auto partial = rath::persistence::partial_path_for(final_path);
    std::optional<rath::persistence::PersistedSession> loaded;
    try {
        if (std::filesystem::exists(final_path))
            loaded = rath::persistence::load_session_file(final_path);
        else if (std::filesystem::exists(partial))
            loaded = rath::persistence::load_session_file(partial);
    } catch (const std::exception&) {
    }
    if (!loaded) return {};
    json::object o;
    o["status"] = loaded->closed ? "completed" : "incomplete";
    if (loaded->usage)
        o["usage"] = {{"prompt_tokens", loaded->usage->prompt_tokens}, {"completion_tokens", loaded->usage->completion_tokens}};
    o["persisted"] = loaded->closed ? "closed" : "partial";
    o["transcript"] = transcript_json(loaded->chunks);
    json::object extras;
    for (const auto& [k, v] : loaded->header.lineage_extras) extras[k] = v;
    o["lineage_extras"] = std::move(extras);
    return json::serialize(o);
}

// The SSE event for one streamed delta (text only: tool-call fragments stay inside).
std::string delta_event(const rath::llm::StreamDelta& d) {
    if (!d.content_delta || d.content_delta->empty()) return {};
    json::object o;
    o["content"] = json::string(*d.content_delta);
    return "event: delta\ndata: " + json::serialize(o) + "\n\n";
}

}  // namespace

// ---------------------------------------------------------------- service

Service::Service(Config config, rath::async::Runtime& runtime)
    : config_(std::move(config)),
      runtime_(runtime),
      http_(runtime, rath::net::HttpClientOptions{.max_connections_per_host = config_.llm_max_connections}),
      gate_(std::make_shared<rath::async::Admission>(config_.max_concurrent_runs)),
      agent_(rath::Session::from_agent_prompt(config_.system_prompt)) {
    rath::llm::ChatClientOptions co;
    co.runtime = &runtime;
    co.http = std::make_shared<rath::net::HttpClient>(http_);
    client_ = rath::llm::chat_client_for(config_.provider, co);
    auto base = std::make_shared<rath::LoopOptions>();
    base->provider = config_.provider;
    std::vector<rath::tool::FlowToolPtr> tools{word_count_tool()};
    if (!config_.mcp_servers.empty()) {
        auto store = std::make_shared<rath::config::ConfigStore>(config_.config_path);
        for (const auto& name : config_.mcp_servers)
            for (auto& t : rath::mcp::mcp_tools_from_config(name, store)) tools.push_back(std::move(t));
    }
    base->tools = rath::tool::ToolSet(std::move(tools));
    base->client = client_;
    base->max_tool_rounds = config_.max_tool_rounds;
    base->runtime = &runtime;
    base->admission = gate_;
    if (config_.run_timeout.count() > 0) base->timeout = config_.run_timeout;
    if (config_.persist_dir) {
        std::filesystem::create_directories(*config_.persist_dir);
        base->persist_path = *config_.persist_dir / "";  // a directory: <id>.jsonl per run
    }
    base_ = std::move(base);
    if (config_.memory_path) {
        rath::memory::MemoryStoreSpec spec;
        spec.options = json::object{{"path", config_.memory_path->string()}};
        memory_ = rath::memory::make_local_memory_backend(&runtime)->open(spec)->acquire();
        recall_ = std::make_shared<rath::flow::DefaultRecallInjection>(config_.memory_recall_top_k);
    }
}

Service::~Service() { release_memory(); }

// The last reference closes the store (its files flushed); off the io threads, so it
// blocks until that is done.
void Service::release_memory() {
    if (memory_ && !memory_released_.exchange(true)) memory_->release();
}

std::size_t Service::live_runs() const {
    std::lock_guard lk(mu_);
    return live_.size();
}

std::shared_ptr<Service::Tenant> Service::tenant_for(const std::string& id) {
    std::lock_guard lk(mu_);
    auto it = tenants_.find(id);
    if (it != tenants_.end()) return it->second;
    if (tenants_.size() >= config_.max_tenants) return nullptr;
    auto t = std::make_shared<Tenant>();
    t->id = id;
    auto o = config_.tenants.find(id);
    t->limits = o != config_.tenants.end() ? o->second : config_.default_tenant;
    tenants_.emplace(id, t);
    return t;
}

asio::awaitable<void> Service::handle(ServerRequest& req, ServerExchange& ex) {
    const std::string_view path = req.path();
    constexpr std::string_view runs = "/v1/runs";
    if (path == runs) {
        if (req.method == "POST") co_return co_await post_run(req, ex);
    } else if (path.size() > runs.size() + 1 && path.substr(0, runs.size() + 1) == "/v1/runs/") {
        std::string id(path.substr(runs.size() + 1));
        if (!valid_run_id(id)) {
            co_await reply(ex, 404, error_body("no such run"));
            co_return;
        }
        if (req.method == "GET") co_return co_await get_run(std::move(id), ex);
        if (req.method == "DELETE") co_return co_await delete_run(std::move(id), ex);
    } else if (path == "/healthz" && req.method == "GET") {
        std::vector<HttpHeader> h{{"Content-Type", "text/plain"}};
        if (closing_.load())
            co_await ex.respond(503, std::move(h), "draining\n");
        else
            co_await ex.respond(200, std::move(h), "ok\n");
        co_return;
    } else if (path == "/metrics" && req.method == "GET") {
        co_return co_await metrics(ex);
    } else {
        co_await reply(ex, 404, error_body("not found"));
        co_return;
    }
    co_await reply(ex, 405, error_body("method not allowed"));
}

asio::awaitable<void> Service::post_run(ServerRequest& req, ServerExchange& ex) {
    // ---- the request
    std::string message;
    bool stream = false;
    {
        if (req.body.size() > config_.max_message_bytes) {
            co_await reply(ex, 413, error_body("message too large"));
            co_return;
        }
        simdjson::ondemand::parser parser;
        simdjson::padded_string body(req.body);
        bool ok = false;
        try {
            auto doc = parser.iterate(body);
            std::string_view m;
            if (doc["message"].get_string().get(m) == simdjson::SUCCESS) {
                message.assign(m);
                ok = true;
            }
            bool s = false;
            if (doc["stream"].get_bool().get(s) == simdjson::SUCCESS) stream = s;
        } catch (const simdjson::simdjson_error&) {
            ok = false;
        }
        if (!ok || message.empty()) {
            co_await reply(ex, 400, error_body("expected a JSON body {\"message\": \"...\", \"stream\": false}"));
            co_return;
        }
    }
    const std::string retry_after = std::to_string(config_.retry_after_seconds);
    // Not a coroutine: counts the refusal and hands back the answer to await.
    auto refuse = [&](int status, const char* reason, const char* text) {
        metrics_.runs_rejected.add({reason});
        std::vector<HttpHeader> h{{"Content-Type", "application/json"}, {"Retry-After", retry_after}};
        return ex.respond(status, std::move(h), error_body(text));
    };

    // ---- admission: service, tenant, budget; nothing is made for a refused run
    if (closing_.load()) {
        co_await refuse(503, "shutting_down", "the service is shutting down");
        co_return;
    }
    const std::string tenant_id(req.header(config_.tenant_header).value_or("default"));
    auto tenant = tenant_for(tenant_id);
    if (!tenant) {
        co_await refuse(429, "tenants", "too many distinct tenants");
        co_return;
    }
    if (tenant->limits.token_budget > 0 && tenant->tokens.load() >= tenant->limits.token_budget) {
        co_await refuse(429, "tenant_budget", "the tenant's token budget is spent");
        co_return;
    }
    if (tenant->active.fetch_add(1) >= tenant->limits.max_concurrent_runs) {
        tenant->active.fetch_sub(1);
        co_await refuse(429, "tenant_concurrency", "the tenant has too many runs in progress");
        co_return;
    }
    if (accepted_.fetch_add(1) >= config_.max_concurrent_runs + config_.max_queued_runs) {
        accepted_.fetch_sub(1);
        tenant->active.fetch_sub(1);
        co_await refuse(503, "overloaded", "too many runs in progress; retry later");
        co_return;
    }

    // ---- the run
    auto run = std::make_shared<Run>();
    run->tenant = tenant;
    run->stream = stream;
    // W3C trace context: the run continues the caller's trace (a header that is not a
    // valid traceparent is ignored and a new trace starts, as the specification says)
    // with a span of its own, the parent of its LLM and MCP requests.
    std::optional<std::string> incoming;
    if (auto h = req.header("traceparent"); h && rath::is_valid_traceparent(*h)) incoming = std::string(*h);
    run->traceparent = incoming.value_or("");
    const std::string outgoing = rath::child_traceparent(incoming);
    auto opt = std::make_shared<rath::LoopOptions>(*base_);
    opt->observer = std::make_shared<RunObserver>(metrics_, run);
    // The OpenAI convention for per-request headers: every model request of this run
    // carries the trace context. Its MCP tool calls read it from the run's session, as
    // the traceparent lineage extra (rath/session/trace_context.hpp).
    opt->provider.sampling.extra_create_args["extra_headers"] = json::object{{"traceparent", outgoing}};
    opt->lineage_extras = json::object{{std::string(rath::traceparent_extra), outgoing}, {"tenant", tenant_id}};
    if (incoming) opt->lineage_extras["traceparent.incoming"] = *incoming;
    // The budget is checked at admission against what the tenant's finished and running
    // runs have spent so far; on its own that would let an admitted run spend any amount.
    // The provider's budget hook (UsageMeter) bounds the run to what was left when it was
    // admitted: the model call that crosses it ends the run (outcome tenant_budget, 429).
    // That call's tokens are spent, and runs of one tenant admitted at once each get the
    // same remainder, so the tenant can overshoot by at most one model call per run it
    // had in flight.
    if (tenant->limits.token_budget > 0) {
        opt->provider.budget_total_tokens = std::max<std::int64_t>(0, tenant->limits.token_budget - tenant->tokens.load());
        opt->provider.on_budget_exceeded = [](std::string_view, const rath::llm::TokenUsage&) {
            throw rath::BudgetExceededError("the tenant's token budget is spent");
        };
    }
    if (stream) {
        run->pipe = std::make_shared<Pipe>(co_await asio::this_coro::executor);
        opt->on_event = [pipe = run->pipe](const rath::llm::StreamDelta& d) {
            if (auto e = delta_event(d); !e.empty()) pipe->push(e);
        };
    }
    rath::Session input = rath::Session::from_user_message(std::move(message));
    if (memory_) {
        // Recall never throws into the run: a failed Find gives no rows (and a warning).
        const rath::ChunkTable rows = input.chunks();  // not pending: never waits
        auto recalled = co_await recall_->async_inject(rows, memory_);
        if (!recalled.empty()) {
            for (const auto& row : rows) recalled.push_back(row);
            input = rath::Session(rath::ChunkTable(std::span<const rath::ChunkRowPtr>(recalled)));
        }
    }
    run->out = rath::run_session_loop(input, agent_, std::move(opt));
    const std::string id = run->out.id();
    {
        std::lock_guard lk(mu_);
        live_.emplace(id, run);
    }
    run->out.when_ready([this, run] { finish(run); }, &runtime_);
    ex.on_client_gone([out = run->out] { out.cancel(); });

    if (!stream) {
        co_await run->finished.async_get();
        json::object o{{"id", id}, {"status", run->outcome}};
        if (run->outcome == "ok") o["answer"] = run->answer;
        if (!run->error.empty()) o["error"] = run->error;
        o["usage"] = {{"prompt_tokens", run->prompt_tokens.load()}, {"completion_tokens", run->completion_tokens.load()}};
        const int status = run->outcome == "ok"              ? 200
                           : run->outcome == "deadline"      ? 504
                           : run->outcome == "error"         ? 502
                           : run->outcome == "tenant_budget" ? 429
                                                             : 503;
        std::vector<HttpHeader> h{{"Content-Type", "application/json"}, {"X-Run-Id", id}};
        co_await ex.respond(status, std::move(h), json::serialize(o));
        co_return;
    }
    std::vector<HttpHeader> h{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}, {"X-Run-Id", id}};
    co_await ex.begin_stream(200, std::move(h));
    std::string first = "event: run\ndata: " + json::serialize(json::object{{"id", id}}) + "\n\n";
    co_await ex.write(first);
    for (bool closed = false; !closed;) {
        co_await run->pipe->bell.async_receive(asio::use_awaitable);
        std::string chunk;
        {
            std::lock_guard lk(run->pipe->mu);
            chunk.swap(run->pipe->buffer);
            closed = run->pipe->closed;
        }
        if (!chunk.empty()) co_await ex.write(chunk);
    }
    co_await run->finished.async_get();
    json::object o{{"id", id}, {"status", run->outcome}};
    if (run->outcome == "ok") o["answer"] = run->answer;
    if (!run->error.empty()) o["error"] = run->error;
    o["usage"] = {{"prompt_tokens", run->prompt_tokens.load()}, {"completion_tokens", run->completion_tokens.load()}};
    std::string last = "event: done\ndata: " + json::serialize(o) + "\n\n";
    co_await ex.write(last);
    co_await ex.finish();
}

// The run ended (on a runtime thread): its outcome, metrics, log line and bookkeeping.
// Runs whether or not its client is still there.
void Service::finish(const std::shared_ptr<Run>& run) {
    try {
        run->out.synchronize();  // not pending any more: never waits; throws the run's error once
        run->outcome = "ok";
        run->answer = run->out.text().value_or("");
    } catch (const rath::Cancelled& c) {
        run->outcome = c.reason() == rath::CancelReason::requested ? "cancelled" : rath::to_string(c.reason());
        run->error = c.what();
    } catch (const rath::BudgetExceededError& e) {
        run->outcome = "tenant_budget";
        run->error = e.what();
    } catch (const std::exception& e) {
        run->outcome = "error";
        run->error = e.what();
    }
    if (run->pipe) run->pipe->close();
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - run->started).count();
    metrics_.runs_finished.add({run->outcome});
    {
        json::object line{{"event", "run"},
                          {"id", run->out.id()},
                          {"tenant", run->tenant->id},
                          {"outcome", run->outcome},
                          {"duration_us", us},
                          {"model_calls", run->model_calls.load()},
                          {"tool_calls", run->tool_calls.load()},
                          {"prompt_tokens", run->prompt_tokens.load()},
                          {"completion_tokens", run->completion_tokens.load()},
                          {"stream", run->stream}};
        if (!run->traceparent.empty()) line["traceparent"] = run->traceparent;
        if (!run->error.empty()) line["error"] = run->error;
        rath::log(rath::LogLevel::info, "rath.service", json::serialize(line));
    }
    {
        std::lock_guard lk(mu_);
        live_.erase(run->out.id());
        Summary s{run->outcome, run->answer, run->error, run->prompt_tokens.load(), run->completion_tokens.load()};
        if (recent_.emplace(run->out.id(), std::move(s)).second) recent_order_.push_back(run->out.id());
        while (recent_order_.size() > config_.recent_runs) {
            recent_.erase(recent_order_.front());
            recent_order_.pop_front();
        }
    }
    run->tenant->active.fetch_sub(1);
    accepted_.fetch_sub(1);
    run->finished.set_value();
}

asio::awaitable<void> Service::get_run(std::string id, ServerExchange& ex) {
    json::object o{{"id", id}};
    std::optional<Summary> summary;
    bool live = false;
    {
        std::lock_guard lk(mu_);
        if (auto it = live_.find(id); it != live_.end()) {
            live = true;
            o["status"] = "running";
            o["usage"] = {{"prompt_tokens", it->second->prompt_tokens.load()},
                          {"completion_tokens", it->second->completion_tokens.load()}};
        } else if (auto r = recent_.find(id); r != recent_.end()) {
            summary = r->second;
        }
    }
    if (summary) {
        o["status"] = summary->status;
        if (!summary->answer.empty()) o["answer"] = summary->answer;
        if (!summary->error.empty()) o["error"] = summary->error;
        o["usage"] = {{"prompt_tokens", summary->prompt_tokens}, {"completion_tokens", summary->completion_tokens}};
    }
    // The persisted record, read on the blocking pool: the transcript (and, for a run
    // this process no longer remembers, its status). The blocking job returns JSON text,
    // so only a string crosses back into this frame.
    if (!live && config_.persist_dir) {
        auto load = [dir = *config_.persist_dir, id] { return persisted_json(dir, id); };
        const std::string text = co_await runtime_.async_blocking(std::move(load));
        if (!text.empty()) {
            json::object p = json::parse(text).as_object();
            if (summary) {
                p.erase("status");
                p.erase("usage");
            }
            for (auto& kv : p) o[kv.key()] = kv.value();
        }
    }
    if (!o.contains("status")) {
        co_await reply(ex, 404, error_body("no such run"));
        co_return;
    }
    co_await reply(ex, 200, json::serialize(o));
}

asio::awaitable<void> Service::delete_run(std::string id, ServerExchange& ex) {
    std::shared_ptr<Run> run;
    std::optional<std::string> finished_status;
    {
        std::lock_guard lk(mu_);
        if (auto it = live_.find(id); it != live_.end())
            run = it->second;
        else if (auto r = recent_.find(id); r != recent_.end())
            finished_status = r->second.status;
    }
    if (run) {
        run->out.cancel();
        std::string body = json::serialize(json::object{{"id", id}, {"status", "cancelling"}});
        co_await reply(ex, 202, std::move(body));
    } else if (finished_status) {
        std::string body = json::serialize(json::object{{"id", id}, {"status", *finished_status}});
        co_await reply(ex, 409, std::move(body));
    } else {
        co_await reply(ex, 404, error_body("no such run"));
    }
}

asio::awaitable<void> Service::metrics(ServerExchange& ex) {
    // /proc reads stay off the io threads.
    auto sample = [] { return std::pair<double, double>(resident_bytes(), open_fds()); };
    const std::pair<double, double> proc = co_await runtime_.async_blocking(std::move(sample));
    metrics_.rss.set({}, proc.first);
    metrics_.fds.set({}, proc.second);
    metrics_.runs_in_flight.set({}, static_cast<double>(gate_->active()));
    metrics_.runs_queued.set({}, static_cast<double>(gate_->waiting()));
    const auto hs = http_.stats();
    metrics_.http_pool_connections.set({}, static_cast<double>(hs.connections_open));
    metrics_.http_pool_requests.set({}, static_cast<double>(hs.requests_in_flight));
    if (server_) metrics_.server_connections.set({}, static_cast<double>(server_->stats().connections_open));
    metrics_.sandboxes.set({}, static_cast<double>(rath::backend::open_sandbox_count()));
    metrics_.registry_size.set({}, static_cast<double>(rath::session_registry().size()));
    for (const auto& s : rath::mcp_call_stats()) {
        metrics_.mcp_calls.set({s.subject, s.outcome}, static_cast<double>(s.count));
        metrics_.mcp_call_seconds.set({s.subject, s.outcome}, s.seconds);
    }
    for (const auto& s : rath::memory_op_stats()) {
        metrics_.memory_ops.set({s.subject, s.outcome}, static_cast<double>(s.count));
        metrics_.memory_op_seconds.set({s.subject, s.outcome}, s.seconds);
    }
    std::vector<HttpHeader> h{{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}};
    co_await ex.respond(200, std::move(h), metrics_.render());
}

std::size_t Service::drain(std::chrono::milliseconds deadline) {
    closing_.store(true);
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (live_runs() > 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::vector<std::shared_ptr<Run>> left;
    {
        std::lock_guard lk(mu_);
        for (auto& [id, run] : live_) left.push_back(run);
    }
    std::size_t cancelled = 0;
    for (auto& run : left) cancelled += run->out.cancel(rath::CancelReason::shutdown) ? 1 : 0;
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (live_runs() > 0 && std::chrono::steady_clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    release_memory();
    return cancelled;
}

}  // namespace service
