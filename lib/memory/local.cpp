// The local backend's async shell: a table of open stores, one lane per store
// directory, and the blocking pool for every file and SQLite call.
#include <rath/async/runtime.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/local.hpp>
#include <rath/memory/store.hpp>

#include <rath/net/http_client.hpp>
#include <rath/net/http_error.hpp>

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <rath/llm/chat_client.hpp>
#include <rath/llm/embedding.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/log.hpp>

#include "lib/memory/extract.hpp"
#include "lib/memory/local_store.hpp"
#include "lib/memory/store_queue.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

namespace fs = std::filesystem;


namespace rath::memory {
namespace {

using detail::LocalStoreState;
using detail::StoreQueue;

// Hands the queue turn on however the op ends.
struct TurnRelease {
    StoreQueue* queue;
    StoreQueue::Access access;
    ~TurnRelease() { queue->release(access); }
};

// Runs `op` in its turn on the store's queue.
template <class T>
boost::asio::awaitable<T> in_turn(std::shared_ptr<StoreQueue> q, StoreQueue::Access access,
                                  boost::asio::awaitable<T> op) {
    auto w = q->enqueue(access);
    auto wait = StoreQueue::wait_turn(q, w);
    co_await std::move(wait);
    TurnRelease release{q.get(), access};
    co_return co_await std::move(op);
}

bool is_read_op(const MemoryOp& op) {
    return std::holds_alternative<OpRead>(op) || std::holds_alternative<OpList>(op) ||
           std::holds_alternative<OpTree>(op) || std::holds_alternative<OpFind>(op) ||
           std::holds_alternative<OpSearch>(op);
}

// One state per canonical directory per process, so that two handles on one store
// share its index and its lane.
class StateTable {
public:
    std::shared_ptr<LocalStoreState> get(const fs::path& root, const detail::Bm25Params& params, bool watch) {
        std::lock_guard lk(mu_);
        auto key = root.string() + "\n" + std::string(detail::to_string(params.analyzer)) + "\n" +
                   std::to_string(params.k1) + "\n" + std::to_string(params.b) + "\n" +
                   std::to_string(params.max_document_bytes) + (watch ? "\nwatch" : "\nstat");
        // Forget stores nobody has open any more.
        std::erase_if(states_, [](const auto& kv) { return kv.second.expired(); });
        auto& weak = states_[key];
        if (auto s = weak.lock()) return s;
        auto s = std::make_shared<LocalStoreState>();
        s->root = root;
        std::erase_if(queues_, [](const auto& kv) { return kv.second.expired(); });
        auto& q = queues_[root.string()];
        s->queue = q.lock();
        if (!s->queue) {
            s->queue = std::make_shared<StoreQueue>();
            q = s->queue;
        }
        s->params = params;
        s->use_watch = watch;
        weak = s;
        return s;
    }

private:
    std::mutex mu_;
    std::map<std::string, std::weak_ptr<LocalStoreState>> states_;
    std::map<std::string, std::weak_ptr<StoreQueue>> queues_;  // by directory
};

StateTable& state_table() {
    static StateTable* t = new StateTable();
    return *t;
}

struct OpenResult {
    std::shared_ptr<LocalStoreState> state;
    std::string error;
};

OpenResult open_blocking(boost::json::object options) {
    std::string err;
    auto params = detail::bm25_params_from(options, err);
    if (!params) return {nullptr, err};
    auto watch = detail::watch_option(options, err);
    if (!watch) return {nullptr, err};
    fs::path root;
    try {
        root = detail::local_store_root(options);
        detail::touch_meta(root, &options, true);
    } catch (const std::exception& e) {
        return {nullptr, std::string("cannot open local memory store: ") + e.what()};
    }
    return {state_table().get(root, *params, *watch), {}};
}

MemoryResult run_blocking(const std::shared_ptr<LocalStoreState>& state, const MemoryStoreSpec& spec,
                          const MemoryOp& op) {
    try {
        return detail::run_op(*state, spec, op);
    } catch (const std::system_error&) {
        return detail::failure_from_current_exception();
    } catch (const MemoryBackendError&) {
        return detail::failure_from_current_exception();
    }
}

struct Fetched {
    std::optional<ExecutionFailure> failure;
    std::string bytes, name;
};

ExecutionFailure fetch_failure(std::string why) {
    return ExecutionFailure{FailureKind::transport, "failed to fetch resource: " + std::move(why), std::nullopt};
}

// GET with a 30 s budget, following up to 10 redirects as urllib does; any non-2xx
// status or transport error is a transport failure.
boost::asio::awaitable<Fetched> fetch_http(rath::net::HttpClient client, std::string url) {
    Fetched out;
    rath::net::HttpResponse resp;
    for (int hop = 0;; ++hop) {
        rath::net::HttpRequest req;
        req.method = "GET";
        req.url = url;
        try {
            co_await client.async_request(req, resp);
        } catch (const std::exception& e) {
            out.failure = fetch_failure(e.what());
            co_return out;
        }
        bool redirect = resp.status == 301 || resp.status == 302 || resp.status == 303 || resp.status == 307 ||
                        resp.status == 308;
        if (redirect && hop < 10) {
            auto loc = resp.header("location");
            auto base = boost::urls::parse_uri(url);
            auto ref = loc ? boost::urls::parse_uri_reference(*loc) : decltype(boost::urls::parse_uri_reference("")){};
            if (loc && base && ref) {
                boost::urls::url next;
                if (boost::urls::resolve(*base, *ref, next)) {
                    url = std::string(next.buffer());
                    continue;
                }
            }
        }
        if (resp.status < 200 || resp.status > 299) {
            out.failure = fetch_failure("HTTP Error " + std::to_string(resp.status));
            co_return out;
        }
        break;
    }
    out.bytes = std::move(resp.body);
    std::string name = "resource";
    if (auto u = boost::urls::parse_uri(url)) {
        std::string path(u->encoded_path());
        auto slash = path.rfind('/');
        std::string last = slash == std::string::npos ? path : path.substr(slash + 1);
        if (!last.empty()) name = last;
    }
    out.name = std::move(name);
    co_return out;
}

class LocalMemoryBackend final : public MemoryBackend {
public:
    explicit LocalMemoryBackend(rath::async::Runtime* rt) : MemoryBackend(local_backend_name, rt) {}

    MemoryCapabilities capabilities() const override { return local_memory_capabilities(); }
    OpSet supported_ops() const override { return all_ops(); }
    std::size_t store_count() const override {
        std::lock_guard lk(mu_);
        return stores_.size();
    }

    boost::asio::awaitable<MemoryStorePtr> async_open(std::optional<MemoryStoreSpec> spec) override {
        MemoryStoreSpec s = spec ? std::move(*spec) : MemoryStoreSpec{};
        boost::json::object options = s.options ? *s.options : boost::json::object{};
        // Jobs are named before the co_await: GCC 12 destroys lambda temporaries of a
        // co_await expression twice.
        auto job = [options]() { return open_blocking(options); };
        OpenResult r = co_await rath::async::Runtime::async_blocking(runtime().blocking_executor(), std::move(job));
        if (!r.state) throw MemoryBackendError(r.error);
        auto store = std::make_shared<MemoryStore>(shared_from_this(), r.state->root.string(), std::move(s));
        std::lock_guard lk(mu_);
        stores_[store.get()] = r.state;
        co_return store;
    }

    boost::asio::awaitable<void> async_close(MemoryStorePtr store) override {
        if (!store->mark_closed()) co_return;
        std::shared_ptr<LocalStoreState> state;
        {
            std::lock_guard lk(mu_);
            auto it = stores_.find(store.get());
            if (it == stores_.end()) co_return;
            state = it->second;
            stores_.erase(it);
            embedders_.erase(store.get());
        }
        auto touch = touch_on_close(runtime().blocking_executor(), state);
        co_await in_turn(state->queue, StoreQueue::Access::exclusive, std::move(touch));
    }

    boost::asio::awaitable<MemoryResult> async_dispatch(MemoryStorePtr store, MemoryOp op) override {
        if (store->closed()) throw MemoryStoreClosed(store->handle());
        if (!supported_ops().test(op.index()))
            throw UnsupportedMemoryOp(std::string(op_type_name(op)), local_backend_name);
        std::shared_ptr<LocalStoreState> state;
        {
            std::lock_guard lk(mu_);
            auto it = stores_.find(store.get());
            if (it == stores_.end()) throw MemoryStoreClosed(store->handle());
            state = it->second;
        }
        if (auto* res = std::get_if<OpResource>(&op); res && detail::is_http_source(res->source)) {
            rath::net::HttpClient http = client();
            auto fetch = run_http_resource(runtime().blocking_executor(), std::move(http), state, *res);
            co_return co_await in_turn(state->queue, StoreQueue::Access::exclusive, std::move(fetch));
        }
        if (auto* write = std::get_if<OpWrite>(&op)) {
            auto batched = write_batched(runtime().blocking_executor(), state, std::move(*write));
            co_return co_await std::move(batched);
        }
        if (std::holds_alternative<OpFind>(op) || std::holds_alternative<OpSearch>(op)) {
            auto resolve = embedder(store);
            std::shared_ptr<rath::llm::EmbeddingClient> emb = co_await std::move(resolve);
            if (emb) {
                FindArgs args = std::visit(
                    [](const auto& o) -> FindArgs {
                        using T = std::decay_t<decltype(o)>;
                        if constexpr (std::is_same_v<T, OpFind> || std::is_same_v<T, OpSearch>)
                            return {o.query, o.target_uri, o.top_k};
                        else
                            return {};
                    },
                    op);
                auto ranked = embedding_find(state, std::move(emb), std::move(args));
                std::optional<MemoryResult> r = co_await std::move(ranked);
                if (r) co_return std::move(*r);
            }
        }
        if (auto* commit = std::get_if<OpCommit>(&op); commit && commit->wait) {
            OpCommit c = *commit;
            auto task = commit_and_extract(store, state, std::move(c));
            co_return co_await std::move(task);
        }
        auto access = is_read_op(op) ? StoreQueue::Access::shared : StoreQueue::Access::exclusive;
        auto task = run_op(runtime().blocking_executor(), state, store, std::move(op));
        co_return co_await in_turn(state->queue, access, std::move(task));
    }

private:
    // A plain write: queued like any exclusive op; when its turn comes, the plain writes
    // queued right behind it are written in the same job.
    static boost::asio::awaitable<MemoryResult> write_batched(rath::async::Runtime::blocking_executor_type pool,
                                                              std::shared_ptr<LocalStoreState> state, OpWrite op) {
        constexpr std::size_t max_batch = 256;
        std::shared_ptr<StoreQueue> q = state->queue;
        auto w = q->enqueue(StoreQueue::Access::exclusive, std::move(op));
        auto wait = StoreQueue::wait_turn(q, w);
        co_await std::move(wait);
        if (w->state == StoreQueue::Waiter::State::joined) co_return std::move(w->result);
        TurnRelease release{q.get(), StoreQueue::Access::exclusive};
        std::vector<StoreQueue::WaiterPtr> batch{w};
        for (auto& more : q->take_batch(max_batch - 1)) batch.push_back(std::move(more));
        auto job = [state, batch]() {
            std::vector<const OpWrite*> ops;
            ops.reserve(batch.size());
            for (const auto& b : batch) ops.push_back(&*b->write);
            std::vector<MemoryResult> results = detail::run_write_batch(*state, ops);
            for (std::size_t i = 0; i < batch.size(); ++i) batch[i]->result = std::move(results[i]);
            return true;
        };
        try {
            (void)co_await rath::async::Runtime::async_blocking(pool, std::move(job));
        } catch (const std::exception& e) {
            for (std::size_t i = 1; i < batch.size(); ++i) {
                batch[i]->result = ExecutionFailure{FailureKind::internal, e.what(), std::nullopt};
                batch[i]->grant.set_value();
            }
            throw;
        }
        for (std::size_t i = 1; i < batch.size(); ++i) batch[i]->grant.set_value();
        co_return std::move(w->result);
    }

    static boost::asio::awaitable<MemoryResult> run_op(rath::async::Runtime::blocking_executor_type pool,
                                                       std::shared_ptr<LocalStoreState> state, MemoryStorePtr store,
                                                       MemoryOp op) {
        auto job = [state, store, op = std::move(op)]() { return run_blocking(state, store->spec(), op); };
        co_return co_await rath::async::Runtime::async_blocking(pool, std::move(job));
    }

    // §2.12: archive on the store's lane, then (outside it) ask the chat client for
    // memos, then write each memo on the lane. Any extraction error: zero memos, logged.
    boost::asio::awaitable<MemoryResult> commit_and_extract(MemoryStorePtr store,
                                                            std::shared_ptr<LocalStoreState> state, OpCommit op) {
        auto pool = runtime().blocking_executor();
        // Operands are named before each co_await: GCC 12 destroys some temporaries of a
        // co_await expression twice.
        MemoryOp archive_op = op;
        auto archive = run_op(pool, state, store, std::move(archive_op));
        MemoryResult archived = co_await in_turn(state->queue, StoreQueue::Access::exclusive, std::move(archive));
        auto* result = std::get_if<CommitResult>(&archived);
        if (!result) co_return archived;
        auto resolve = [store]() { return resolve_chat(store->spec()); };
        std::shared_ptr<rath::llm::ChatClient> chat = co_await rath::async::Runtime::async_blocking(pool, std::move(resolve));
        if (!chat) co_return archived;
        std::vector<std::pair<std::string, std::string>> memos;
        try {
            rath::llm::ChatRequest req;
            req.messages.push_back(rath::llm::Message::system(std::string(detail::extraction_system_prompt())));
            req.messages.push_back(rath::llm::Message::user(detail::extraction_user_prompt(op.messages)));
            req.sampling.temperature = 0.0;
            rath::llm::ChatResponse resp;
            co_await chat->async_complete(req, resp);
            std::string text;
            if (!resp.choices.empty() && resp.choices.front().message.content)
                text = *resp.choices.front().message.content;
            memos = detail::parse_extracted(text);
        } catch (const std::exception& e) {
            rath::log(LogLevel::warning, "rath.memory", std::string("memory commit: memo extraction failed: ") + e.what());
            co_return archived;
        }
        // Decision (§2.12 quirk): the count is the memos written; invalid URIs are skipped.
        std::int64_t written = 0;
        for (auto& [uri, content] : memos) {
            auto write = write_batched(pool, state, OpWrite{uri, content});
            MemoryResult w = co_await std::move(write);
            if (std::holds_alternative<WriteResult>(w)) ++written;
        }
        result->extracted_count = written;
        co_return archived;
    }

    struct FindArgs {
        std::string query;
        std::optional<std::string> target;
        int top_k = 8;
    };

    // §2.10 client resolution, once per store handle (a failure is remembered too, so
    // later finds go straight to BM25): options.embedding as given, else an
    // OpenAI-compatible client for the options.embedding_provider entry of the config.
    boost::asio::awaitable<std::shared_ptr<rath::llm::EmbeddingClient>> embedder(MemoryStorePtr store) {
        {
            std::lock_guard lk(mu_);
            if (auto it = embedders_.find(store.get()); it != embedders_.end()) co_return it->second;
        }
        std::shared_ptr<rath::llm::EmbeddingClient> client = store->spec().embedding;
        const boost::json::value* name =
            store->spec().options ? store->spec().options->if_contains("embedding_provider") : nullptr;
        if (!client && name && name->is_string()) {
            rath::async::Runtime* rt = &runtime();
            auto job = [rt, n = std::string(name->as_string())]() -> std::shared_ptr<rath::llm::EmbeddingClient> {
                try {
                    rath::llm::ChatClientOptions o;
                    o.runtime = rt;
                    return std::make_shared<rath::llm::EmbeddingClient>(
                        rath::llm::EmbeddingProvider::from_config(std::string_view(n)), std::move(o));
                } catch (const std::exception& e) {
                    rath::log(LogLevel::info, "rath.memory",
                              std::string("LocalMemoryBackend: embeddings disabled: ") + e.what());
                    return nullptr;
                }
            };
            auto pool = runtime().blocking_executor();
            auto resolving = rath::async::Runtime::async_blocking(pool, std::move(job));
            client = co_await std::move(resolving);
        }
        std::lock_guard lk(mu_);
        if (stores_.count(store.get())) embedders_.emplace(store.get(), client);
        co_return client;
    }

    // §2.10 with vectors keyed by content hash: the scope is read and looked up in the
    // cache on the store's lane; the query and the uncached bodies are embedded off the
    // lane (query first, then the bodies in one request); new vectors are cached on the
    // lane. nullopt: the embedding side failed (logged), the caller ranks with BM25.
    // A vector whose length differs from the query's is a failure (not the spec's
    // common-prefix dot product), as is a query vector of the wrong declared dimension.
    boost::asio::awaitable<std::optional<MemoryResult>> embedding_find(std::shared_ptr<LocalStoreState> state,
                                                                       std::shared_ptr<rath::llm::EmbeddingClient> client,
                                                                       FindArgs args) {
        auto pool = runtime().blocking_executor();
        const auto& provider = client->provider();
        std::string model = provider.model.empty() ? std::string("<embedding>") : provider.model;
        auto scope_job = [state, target = args.target, model]() -> std::variant<detail::EmbedScope, ExecutionFailure> {
            try {
                return detail::embedding_scope(*state, target, model);
            } catch (const std::exception& e) {
                return ExecutionFailure{FailureKind::internal, std::string("OSError: ") + e.what(), std::nullopt};
            }
        };
        auto scope_task = run_blocking_job(pool, std::move(scope_job));
        auto scoped = co_await in_turn(state->queue, StoreQueue::Access::exclusive, std::move(scope_task));
        if (auto* f = std::get_if<ExecutionFailure>(&scoped)) co_return MemoryResult(*f);
        detail::EmbedScope sc = std::move(std::get<detail::EmbedScope>(scoped));
        if (sc.failure) co_return MemoryResult(*sc.failure);
        if (sc.docs.empty()) co_return MemoryResult(FindResult{});

        std::vector<double> qv;
        std::vector<std::pair<std::string, std::vector<double>>> fresh;
        // A cancelled find stays cancelled, it does not fall back.
        auto cs = co_await boost::asio::this_coro::cancellation_state;
        try {
            std::vector<std::string> q{args.query};
            auto qcall = client->async_embed(std::move(q));
            auto qvs = co_await std::move(qcall);
            if (qvs.size() != 1 || qvs.front().empty())
                throw rath::Error("the embedding endpoint returned no vector for the query");
            qv = std::move(qvs.front());
            if (provider.dimensions && static_cast<std::int64_t>(qv.size()) != *provider.dimensions)
                throw rath::Error("the query embedding has " + std::to_string(qv.size()) + " dimensions, expected " +
                                  std::to_string(*provider.dimensions));
            std::vector<std::size_t> missing;
            std::vector<std::string> texts;
            for (std::size_t i = 0; i < sc.docs.size(); ++i) {
                auto& d = sc.docs[i];
                if (d.cached && d.cached->size() == qv.size()) continue;
                d.cached.reset();
                missing.push_back(i);
                texts.push_back(d.text);
            }
            if (!missing.empty()) {
                auto dcall = client->async_embed(std::move(texts));
                auto vs = co_await std::move(dcall);
                if (vs.size() > missing.size())
                    throw rath::Error("the embedding endpoint returned " + std::to_string(vs.size()) +
                                      " vectors for " + std::to_string(missing.size()) + " texts");
                // Fewer vectors than texts: the documents left over are left out (§2.10).
                for (std::size_t j = 0; j < vs.size(); ++j) {
                    if (vs[j].size() != qv.size())
                        throw rath::Error("a document embedding has " + std::to_string(vs[j].size()) +
                                          " dimensions, the query's has " + std::to_string(qv.size()));
                    auto& d = sc.docs[missing[j]];
                    d.cached = vs[j];
                    fresh.emplace_back(d.sha, std::move(vs[j]));
                }
            }
        } catch (const std::exception& e) {
            if (cs.cancelled() != boost::asio::cancellation_type::none) throw;
            rath::log(LogLevel::warning, "rath.memory", "LocalMemoryBackend: embedding rank failed; falling back to BM25");
            rath::log(LogLevel::info, "rath.memory", std::string("LocalMemoryBackend: embedding failure: ") + e.what());
            co_return std::nullopt;
        }
        if (!fresh.empty()) {
            auto store_job = [state, model, fresh = std::move(fresh)]() {
                detail::remember_vectors(*state, model, fresh);
                return true;
            };
            auto store_task = run_blocking_job(pool, std::move(store_job));
            (void)co_await in_turn(state->queue, StoreQueue::Access::exclusive, std::move(store_task));
        }
        co_return MemoryResult(rank_by_cosine(sc.docs, qv, args.top_k));
    }

    template <class Job>
    static boost::asio::awaitable<std::invoke_result_t<Job>> run_blocking_job(
        rath::async::Runtime::blocking_executor_type pool, Job job) {
        co_return co_await rath::async::Runtime::async_blocking(pool, std::move(job));
    }

    // Cosine similarity; an empty vector or a zero norm scores 0.0.
    static double cosine(const std::vector<double>& a, const std::vector<double>& b) {
        if (a.empty() || b.empty()) return 0.0;
        double dot = 0, na = 0, nb = 0;
        std::size_t n = std::min(a.size(), b.size());
        for (std::size_t i = 0; i < n; ++i) dot += a[i] * b[i];
        for (double x : a) na += x * x;
        for (double x : b) nb += x * x;
        if (na == 0.0 || nb == 0.0) return 0.0;
        return dot / (std::sqrt(na) * std::sqrt(nb));
    }

    static FindResult rank_by_cosine(std::vector<detail::EmbedDoc>& docs, const std::vector<double>& qv, int top_k) {
        std::vector<std::pair<double, std::size_t>> scored;
        scored.reserve(docs.size());
        for (std::size_t i = 0; i < docs.size(); ++i)
            if (docs[i].cached) scored.emplace_back(cosine(qv, *docs[i].cached), i);
        std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        scored.resize(std::min(scored.size(), static_cast<std::size_t>(std::max(0, top_k))));
        FindResult out;
        out.hits.reserve(scored.size());
        for (auto& [score, i] : scored)
            out.hits.push_back({std::move(docs[i].uri), score, std::move(docs[i].snippet), std::nullopt});
        return out;
    }

    // options.chat (a live client) or options.chat_provider (an llm.providers entry);
    // a construction failure disables extraction for this commit, logged at info.
    static std::shared_ptr<rath::llm::ChatClient> resolve_chat(const MemoryStoreSpec& spec) {
        if (spec.chat) return spec.chat;
        const boost::json::value* name = spec.options ? spec.options->if_contains("chat_provider") : nullptr;
        if (!name || !name->is_string()) return nullptr;
        try {
            auto provider = rath::llm::Provider::from_config(std::string_view(name->as_string()));
            return rath::llm::chat_client_for(provider);
        } catch (const std::exception& e) {
            rath::log(LogLevel::info, "rath.memory", std::string("memory commit: no chat client: ") + e.what());
            return nullptr;
        }
    }

    rath::net::HttpClient client() {
        std::lock_guard lk(mu_);
        if (!http_) {
            rath::net::HttpClientOptions o;
            o.total_timeout = std::chrono::seconds(30);
            http_.emplace(runtime(), o);
        }
        return *http_;
    }

    // The destination is checked before anything is fetched (§2.11); the fetch runs on
    // the io threads, the ingest on the blocking pool.
    static boost::asio::awaitable<MemoryResult> run_http_resource(rath::async::Runtime::blocking_executor_type pool,
                                                                  rath::net::HttpClient http,
                                                                  std::shared_ptr<LocalStoreState> state,
                                                                  OpResource op) {
        auto check = [state, op]() -> MemoryResult {
            if (auto err = detail::resource_destination_error(*state, op)) return *err;
            return WriteResult{};
        };
        MemoryResult checked = co_await rath::async::Runtime::async_blocking(pool, std::move(check));
        if (is_failure(checked)) co_return checked;
        std::string url = op.source;
        auto fetch = fetch_http(http, std::move(url));
        Fetched f = co_await std::move(fetch);
        if (f.failure) co_return *f.failure;
        auto job = [state, op, f = std::move(f)]() -> MemoryResult {
            try {
                return detail::ingest_resource(*state, op, f.bytes, op.source, f.name);
            } catch (const std::system_error& e) {
                return ExecutionFailure{FailureKind::internal, std::string("OSError: ") + e.what(), std::nullopt};
            }
        };
        co_return co_await rath::async::Runtime::async_blocking(pool, std::move(job));
    }

    static boost::asio::awaitable<void> touch_on_close(rath::async::Runtime::blocking_executor_type pool,
                                                       std::shared_ptr<LocalStoreState> state) {
        auto job = [state]() {
            try {
                detail::touch_meta(state->root, nullptr, false);
            } catch (const std::exception&) {
                // §2.4: I/O errors on close are ignored.
            }
        };
        co_await rath::async::Runtime::async_blocking(pool, std::move(job));
    }

    mutable std::mutex mu_;
    std::unordered_map<const MemoryStore*, std::shared_ptr<LocalStoreState>> stores_;
    std::optional<rath::net::HttpClient> http_;  // made on the first HTTP resource
    // Per open store: its resolved embedding client (null: embeddings disabled).
    std::unordered_map<const MemoryStore*, std::shared_ptr<rath::llm::EmbeddingClient>> embedders_;
};

}  // namespace

MemoryCapabilities local_memory_capabilities() noexcept {
    MemoryCapabilities c;
    c.scope_model = ScopeModel::hybrid;
    c.supports_write = c.supports_read = c.supports_list = c.supports_tree = true;
    c.supports_vector_search = true;
    c.supports_intent_search = false;
    c.supports_resource_ingest = c.supports_session_commit = true;
    c.supports_l0_l1_l2 = false;
    return c;
}

MemoryBackendPtr make_local_memory_backend(rath::async::Runtime* runtime) {
    return std::make_shared<LocalMemoryBackend>(runtime);
}

}  // namespace rath::memory
