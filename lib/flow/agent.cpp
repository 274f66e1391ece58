#include <rath/flow/agent.hpp>

#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>
#include <rath/backend/backend.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/registry.hpp>
#include <rath/log.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/config/store.hpp>
#include <rath/memory/backend.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/registry.hpp>
#include <rath/memory/store.hpp>
#include <rath/session/lineage_recorder.hpp>

#include "lib/session/session_state.hpp"
#include "lib/session/uuid.hpp"

#include <exception>
#include <stdexcept>

namespace rath::flow {

namespace asio = boost::asio;

namespace {

void log_warning(const std::string& msg) { rath::log(LogLevel::warning, "rath.flow", msg); }

async::Runtime& runtime_of(const LoopOptions& o) { return o.runtime ? *o.runtime : async::Runtime::default_runtime(); }

std::shared_ptr<const MemoryInjectionPolicy> default_policy() {
    static const auto policy = std::make_shared<const DefaultRecallInjection>();
    return policy;
}

// The injected input: a fork of `input` (its placement, parent `input`, Session.fork)
// over `rows`.
Session fork_over(const Session& input, ChunkTable rows) {
    SessionOptions so;
    so.sandbox_backend = input.sandbox_backend();
    so.sandbox_spec = input.sandbox_spec();
    Session eff(std::move(rows), std::move(so));
    if (auto sb = input.sandbox(); sb && !sb->closed()) {
        try {
            eff.bind_sandbox(sb);
        } catch (const backend::BackendSandboxClosed&) {
            // Closed in between: the fork keeps the target and opens its own.
        }
    }
    lineage::stamp_new_session(eff, {input.id()}, "Session.fork", LineageKind::op_fork);
    return eff;
}

std::vector<ChunkRowPtr> rows_before(std::vector<ChunkRowPtr> extras, const ChunkTable& rows) {
    for (const auto& r : rows) extras.push_back(r);
    return extras;
}

struct InjectRun {
    Session eff;
    Session input;
    memory::MemoryStorePtr store;
    std::shared_ptr<const MemoryInjectionPolicy> policy;
    async::Lazy<void> done{};
};

// Produces the pending fork: waits for the input (its error becomes the fork's, and so
// the run's), recalls, publishes extras + input rows.
asio::awaitable<void> inject_body(std::shared_ptr<InjectRun> run) {
    if (run->input.pending()) co_await run->input.async_synchronize();
    ChunkTable rows = detail::SessionAccess::raw_chunks(run->input);
    std::vector<ChunkRowPtr> extras;
    try {
        ChunkTable transcript = rows;
        memory::MemoryStorePtr store = run->store;
        extras = co_await run->policy->async_inject(std::move(transcript), std::move(store));
    } catch (const std::exception& e) {
        log_warning(std::string("memory injection failed; continuing without recalled memory: ") + e.what());
    }
    std::vector<ChunkRowPtr> all = rows_before(std::move(extras), rows);
    detail::SessionAccess::publish(run->eff, ChunkTable(std::span<const ChunkRowPtr>(all)), std::nullopt);
    run->done.set_value();
}

using CommitCallback = std::function<void(const Session&, const memory::MemoryResult&)>;

// Commits a finished run (`pending` is its completion, to skip a failed run without
// consuming its error) and releases the reference taken for the commit.
asio::awaitable<void> commit_body(Session out, std::shared_ptr<detail::PendingResult> pending,
                                  memory::MemoryStorePtr store, CommitCallback on_commit) {
    if (pending && pending->done.failed()) {
        store->release();
        co_return;
    }
    memory::MemoryResult result;
    try {
        memory::OpCommit op;
        op.session_id = out.id();
        op.messages = commit_messages(detail::SessionAccess::raw_chunks(out));
        memory::MemoryOp any = std::move(op);
        result = co_await store->async_dispatch(std::move(any));
    } catch (const std::exception& e) {
        result = memory::ExecutionFailure{memory::FailureKind::internal, e.what()};
    }
    if (const auto* f = std::get_if<memory::ExecutionFailure>(&result))
        log_warning("memory commit failed; continuing without persisted memory: " + f->message);
    store->release();
    if (on_commit) {
        try {
            on_commit(out, result);
        } catch (const std::exception& e) {
            log_warning(std::string("on_commit raised: ") + e.what());
        } catch (...) {
            log_warning("on_commit raised a non-standard exception");
        }
    }
}

// Starts the commit of `out` once it is finished, without waiting for it.
void commit_when_ready(const Session& out, const memory::MemoryStorePtr& store, CommitCallback on_commit,
                       async::Runtime& rt) {
    memory::MemoryStorePtr held;
    try {
        held = store->acquire();  // the commit's own reference: close() may come first
    } catch (const std::exception& e) {
        log_warning(std::string("memory commit failed; continuing without persisted memory: ") + e.what());
        return;
    }
    std::shared_ptr<detail::PendingResult> pending;
    {
        auto& st = detail::SessionAccess::state(out);
        std::lock_guard lk(st.mu);
        pending = st.pending;
    }
    out.when_ready(
        [out, pending, held, on_commit = std::move(on_commit), &rt]() mutable {
            try {
                (void)rt.submit(commit_body(std::move(out), std::move(pending), held, std::move(on_commit)));
            } catch (const std::exception& e) {  // the runtime is shutting down
                log_warning(std::string("memory commit failed; continuing without persisted memory: ") + e.what());
                held->release();
            }
        },
        &rt);
}

}  // namespace

AgentImpl::AgentImpl(std::string system_prompt, AgentOptions options)
    : Workflow(options.description), options_(std::move(options)) {
    // A provider with every field unset is "no provider" (memory_flow.md §4.3).
    const bool no_provider = llm::same_settings(options_.loop.provider, llm::Provider{});
    if (no_provider && !options_.model)
        throw std::invalid_argument("flow.Agent requires either provider=Provider(...) or model=\"...\"");
    llm::Provider provider = options_.loop.provider;
    if (!provider.model && options_.model) provider.model = options_.model;
    agent_ = register_param("agent", std::make_shared<AgentParam>(
                                         AgentParam{Session::from_agent_prompt(std::move(system_prompt)), provider}));
    if (options_.max_concurrent_runs > 0) admission_ = std::make_shared<async::Admission>(options_.max_concurrent_runs);
    if (options_.memory) {
        options_.memory->acquire();  // throws MemoryStoreClosed
        agent_->memory = options_.memory;
    }
}

AgentImpl::~AgentImpl() {
    try {
        close();
    } catch (const std::exception& e) {
        log_warning(std::string("closing the agent's memory store failed: ") + e.what());
    }
}

std::shared_ptr<const LoopOptions> AgentImpl::loop_options() const {
    // Comparing the provider is cheaper than copying it into every run (a parked
    // session would carry ~1 KB of its strings). A provider with a budget callback never
    // compares equal, so it is copied per run.
    std::lock_guard lk(mu_);
    if (snapshot_ && llm::same_settings(snapshot_->provider, agent_->provider)) return snapshot_;
    auto o = std::make_shared<LoopOptions>(options_.loop);
    o->provider = agent_->provider;
    o->admission = admission_;
    if (!o->client && !o->executor) {
        // One client per snapshot, shared by its runs, instead of one per run (each
        // resolving key, URL and headers again).
        try {
            o->client = llm::chat_client_for(o->provider);
        } catch (const ProviderConfigError&) {
            // No key, unknown kind: each run builds the client itself, fails the same
            // way, and reports it where its output is read (session.md §2.2).
        }
    }
    snapshot_ = o;
    return o;
}

Session AgentImpl::forward(Session input) {
    std::shared_ptr<const LoopOptions> options = loop_options();
    MemoryBinding mem = memory_binding();
    if (!mem.store) return run_session_loop(input, agent_->agent_session, std::move(options));
    async::Runtime& rt = runtime_of(*options);
    auto run = std::make_shared<InjectRun>(InjectRun{fork_over(input, ChunkTable{}), input, mem.store, mem.policy});
    detail::SessionAccess::set_pending(run->eff, run->done);
    Session eff = run->eff;
    async::Lazy<void> done = run->done;
    rt.submit_into(inject_body(std::move(run)), std::move(done));
    Session out = run_session_loop(eff, agent_->agent_session, options);
    if (mem.commit) commit_when_ready(out, mem.store, std::move(mem.on_commit), rt);
    return out;
}

boost::asio::awaitable<Session> AgentImpl::async_forward(Session input) {
    // Named, not temporaries inside the co_await expression (GCC 12 destroys aggregate
    // temporaries there twice).
    std::shared_ptr<const LoopOptions> options = loop_options();
    Session agent_session = agent_->agent_session;
    MemoryBinding mem = memory_binding();
    if (!mem.store)
        co_return co_await async_run_session_loop(std::move(input), std::move(agent_session), std::move(options));
    ChunkTable rows = co_await input.async_chunks();
    std::vector<ChunkRowPtr> extras;
    try {
        ChunkTable transcript = rows;
        memory::MemoryStorePtr store = mem.store;
        extras = co_await mem.policy->async_inject(std::move(transcript), std::move(store));
    } catch (const std::exception& e) {
        log_warning(std::string("memory injection failed; continuing without recalled memory: ") + e.what());
    }
    Session effective = input;
    if (!extras.empty()) {
        std::vector<ChunkRowPtr> all = rows_before(std::move(extras), rows);
        effective = fork_over(input, ChunkTable(std::span<const ChunkRowPtr>(all)));
    }
    Session out = co_await async_run_session_loop(std::move(effective), std::move(agent_session), options);
    if (mem.commit) commit_when_ready(out, mem.store, std::move(mem.on_commit), runtime_of(*options));
    co_return out;
}

AgentImpl::MemoryBinding AgentImpl::memory_binding() const {
    std::lock_guard lk(mu_);
    if (!options_.memory) return {};
    return MemoryBinding{options_.memory, options_.memory_inject ? options_.memory_inject : default_policy(),
                         options_.commit_on_forward, options_.on_commit};
}

memory::MemoryStorePtr AgentImpl::memory() const {
    std::lock_guard lk(mu_);
    return options_.memory;
}

memory::MemoryStorePtr AgentImpl::require_memory() const {
    memory::MemoryStorePtr store = memory();
    if (!store) throw std::runtime_error("agent has no memory store");
    return store;
}

void AgentImpl::close() {
    memory::MemoryStorePtr store;
    {
        std::lock_guard lk(mu_);
        store = std::move(options_.memory);
        options_.memory.reset();
        agent_->memory.reset();
    }
    if (store) store->release();
}

namespace {
memory::OpWrite remember_op(std::string content, const std::string& scope, const std::string& category, bool wait) {
    memory::OpWrite op;
    op.uri = "memory://" + scope + "/memories/" + category + "/" + detail::new_uuid_v4().substr(0, 8);
    op.content = std::move(content);
    op.wait = wait;
    return op;
}
}  // namespace

memory::MemoryResult AgentImpl::remember_memory(std::string content, std::string scope, std::string category,
                                                bool wait) {
    return require_memory()->dispatch(remember_op(std::move(content), scope, category, wait));
}

asio::awaitable<memory::MemoryResult> AgentImpl::async_remember_memory(std::string content, std::string scope,
                                                                       std::string category, bool wait) {
    memory::MemoryStorePtr store = require_memory();
    memory::MemoryOp op = remember_op(std::move(content), scope, category, wait);  // named: GCC 12, see above
    co_return co_await store->async_dispatch(std::move(op));
}

memory::MemoryResult AgentImpl::recall_memory(std::string query, int top_k, std::optional<std::string> target_uri) {
    return require_memory()->dispatch(memory::OpFind{std::move(query), std::move(target_uri), top_k});
}

asio::awaitable<memory::MemoryResult> AgentImpl::async_recall_memory(std::string query, int top_k,
                                                                     std::optional<std::string> target_uri) {
    memory::MemoryStorePtr store = require_memory();
    memory::MemoryOp op = memory::OpFind{std::move(query), std::move(target_uri), top_k};  // named: GCC 12
    co_return co_await store->async_dispatch(std::move(op));
}

memory::MemoryResult AgentImpl::commit_memory(const Session& session, bool wait) {
    memory::MemoryStorePtr store = require_memory();
    memory::OpCommit op;
    op.session_id = session.id();
    op.messages = commit_messages(session.chunks());
    op.wait = wait;
    return store->dispatch(std::move(op));
}

asio::awaitable<memory::MemoryResult> AgentImpl::async_commit_memory(Session session, bool wait) {
    memory::MemoryStorePtr store = require_memory();
    ChunkTable rows = co_await session.async_chunks();
    memory::OpCommit op;
    op.session_id = session.id();
    op.messages = commit_messages(rows);
    op.wait = wait;
    memory::MemoryOp any = std::move(op);
    co_return co_await store->async_dispatch(std::move(any));
}

std::shared_ptr<Workflow> AgentImpl::clone() const {
    AgentOptions o = options();
    o.loop.provider = agent_->provider;
    auto copy = std::make_shared<AgentImpl>(std::string(), std::move(o));
    *copy->agent_ = *agent_;  // the same prompt session and provider, in a param of its own
    return copy;
}

tool::ToolSet AgentImpl::tools() const {
    std::lock_guard lk(mu_);
    return options_.loop.tools;
}

void AgentImpl::register_tool(tool::FlowToolPtr tool) {
    std::lock_guard lk(mu_);
    options_.loop.tools = options_.loop.tools.with(std::move(tool));
    snapshot_.reset();
}

void AgentImpl::unregister_tool(std::string_view name) {
    std::lock_guard lk(mu_);
    options_.loop.tools = options_.loop.tools.without(name);
    snapshot_.reset();
}

AgentOptions AgentImpl::options() const {
    std::lock_guard lk(mu_);
    return options_;
}

memory::MemoryStorePtr open_memory(std::string_view name) {
    auto cfg = config::ConfigStore::load();
    boost::json::object doc = cfg->document();
    const boost::json::value* providers = nullptr;
    if (const auto* m = doc.if_contains("memory"); m && m->is_object()) providers = m->as_object().if_contains("providers");
    if (providers && providers->is_object() && providers->as_object().contains(name)) {
        config::MemoryProviderEntry entry = cfg->get_memory_provider(name);
        return memory::get_memory_backend(entry.backend_kind)->open(memory::MemoryStoreSpec::from_config(std::string(name)));
    }
    return memory::get_memory_backend(name)->open();
}

memory::MemoryStorePtr open_memory(memory::MemoryStoreSpec spec) {
    return memory::current_memory_backend()->open(std::move(spec));
}

}  // namespace rath::flow
