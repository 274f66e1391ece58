#include <rath/cluster/client.hpp>

#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/pg/run_queue.hpp>
#include <rath/pg/session_store.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace rath::cluster {

namespace json = boost::json;

RunFailed::RunFailed(std::int64_t run_id, std::string error)
    : Error("run " + std::to_string(run_id) + " failed: " + error), run_id_(run_id), error_(std::move(error)) {}

struct Client::State {
    ClientOptions o;
    async::Runtime* rt;
    std::shared_ptr<pg::PostgresSessionStore> store;
    pg::RunQueue queue;

    std::mutex mu;
    std::map<std::int64_t, std::vector<async::Lazy<Session>>> waiting;  // by run id
    std::vector<std::int64_t> added;  // to `waiting` since the watcher last looked
    bool watching = false;
    bool closed = false;
    std::optional<async::Lazy<void>> watcher;

    explicit State(ClientOptions opts)
        : o(std::move(opts)),
          rt(o.runtime ? o.runtime : &async::Runtime::default_runtime()),
          store(pg::make_postgres_session_store({.conninfo = o.conninfo, .schema = o.schema, .runtime = rt})),
          queue(pg::RunQueueOptions{.conninfo = o.conninfo, .schema = o.schema, .queue = o.queue, .runtime = rt}) {}
};

namespace {

using StatePtr = std::shared_ptr<Client::State>;

boost::asio::awaitable<void> settle(StatePtr st, std::int64_t id, pg::RunStatus status,
                                    std::vector<async::Lazy<Session>> outs) {
    std::exception_ptr error;
    std::optional<Session> session;
    try {
        if (status.state == pg::RunState::failed) throw RunFailed(id, status.error.value_or(""));
        if (!status.result) throw RunFailed(id, "the run finished without a result");
        json::value r = json::parse(*status.result);
        auto* sid = r.is_object() ? r.get_object().if_contains("session_id") : nullptr;
        if (!sid || !sid->is_string()) throw RunFailed(id, "the run's result names no session_id: " + *status.result);
        auto stored = co_await st->store->async_load(std::string(sid->get_string()));
        session = stored.to_session();
    } catch (...) {
        error = std::current_exception();
    }
    for (auto& out : outs) {
        if (error) (void)out.try_set_exception(error);
        else (void)out.try_set_value(*session);
    }
}

boost::asio::awaitable<void> watch(StatePtr st) {
    // What to look at: every run waited for at the start, after a timeout and when the
    // listening connection was remade; else the runs the notifications named, and those
    // waited for since the last look (their notification may have come before).
    bool look_at_all = true;
    std::vector<std::int64_t> notified;
    for (;;) {
        std::vector<std::int64_t> ids;
        {
            std::lock_guard lk(st->mu);
            if (st->closed) {
                st->watching = false;
                co_return;
            }
            if (look_at_all) {
                for (auto& [id, outs] : st->waiting) ids.push_back(id);
            } else {
                for (auto id : notified)
                    if (st->waiting.count(id)) ids.push_back(id);
                for (auto id : st->added)
                    if (st->waiting.count(id)) ids.push_back(id);
                std::sort(ids.begin(), ids.end());
                ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
            }
            st->added.clear();
        }
        bool db_away = false;
        try {
            std::vector<std::pair<std::int64_t, pg::RunStatus>> finished;
            if (!ids.empty()) finished = co_await st->queue.async_finished(std::move(ids));
            for (auto& [id, status] : finished) {
                std::vector<async::Lazy<Session>> outs;
                {
                    std::lock_guard lk(st->mu);
                    auto it = st->waiting.find(id);
                    if (it == st->waiting.end()) continue;
                    outs = std::move(it->second);
                    st->waiting.erase(it);
                }
                // Loaded side by side: one slow load does not hold the others back.
                (void)st->rt->submit(settle(st, id, std::move(status), std::move(outs)));
            }
            // Waits even with nothing to wait for: reading the channel keeps the
            // notifications of other clients' runs from piling up on the connection.
            auto notice = co_await st->queue.async_wait_for_finished_runs(st->o.poll_interval);
            look_at_all = notice.timed_out || notice.look_at_all;
            notified = std::move(notice.ids);
        } catch (const pg::PgError& e) {
            // The database is away: look again after the fallback interval.
            log(LogLevel::warning, "rath.cluster", std::string("waiting for runs: ") + e.what());
            db_away = true;
        } catch (...) {
            // The destructor's cancellation ends the watch quietly. Anything else (the
            // runtime shutting down, a bug) fails the values waiting now, with that
            // error, rather than leave them waiting for nobody; a later wait starts a
            // new watcher.
            std::map<std::int64_t, std::vector<async::Lazy<Session>>> left;
            {
                std::lock_guard lk(st->mu);
                st->watching = false;
                if (!st->closed) left.swap(st->waiting);
            }
            for (auto& [id, outs] : left)
                for (auto& out : outs) (void)out.try_set_exception(std::current_exception());
            co_return;
        }
        if (db_away) {
            look_at_all = true;
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, st->o.poll_interval);
            co_await t.async_wait(boost::asio::use_awaitable);
        }
    }
}

void wait_for(const StatePtr& st, std::int64_t id, async::Lazy<Session> out) {
    bool start = false;
    {
        std::lock_guard lk(st->mu);
        if (st->closed) {
            (void)out.try_set_exception(std::make_exception_ptr(ClientClosed("the cluster client was closed")));
            return;
        }
        st->waiting[id].push_back(std::move(out));
        st->added.push_back(id);
        if (!st->watching) st->watching = start = true;
    }
    if (start) {
        auto w = st->rt->submit(watch(st));
        std::lock_guard lk(st->mu);
        st->watcher = std::move(w);
    }
}

boost::asio::awaitable<std::int64_t> enqueue(StatePtr st, std::string agent_name, Session input) {
    // Stored once the input's producer is done (its error fails the submission), in one
    // transaction.
    co_await st->store->async_save(input);
    json::object payload{{"agent", std::move(agent_name)}, {"input_session_id", input.id()}};
    co_return co_await st->queue.async_enqueue(json::serialize(payload));
}

boost::asio::awaitable<void> submit_task(StatePtr st, std::string agent_name, Session input, async::Lazy<Session> out) {
    try {
        std::int64_t id = co_await enqueue(st, std::move(agent_name), std::move(input));
        wait_for(st, id, std::move(out));
    } catch (...) {
        (void)out.try_set_exception(std::current_exception());
    }
}

}  // namespace

Client::Client(ClientOptions options) : st_(std::make_shared<State>(std::move(options))) {}

Client::~Client() {
    std::map<std::int64_t, std::vector<async::Lazy<Session>>> left;
    std::optional<async::Lazy<void>> watcher;
    {
        std::lock_guard lk(st_->mu);
        st_->closed = true;
        left.swap(st_->waiting);
        watcher = st_->watcher;
    }
    if (watcher) (void)watcher->cancel();
    auto closed = std::make_exception_ptr(ClientClosed("the cluster client was closed"));
    for (auto& [id, outs] : left)
        for (auto& out : outs) (void)out.try_set_exception(closed);
}

async::Lazy<Session> Client::submit(std::string agent_name, Session input) {
    async::Lazy<Session> out;
    (void)st_->rt->submit(submit_task(st_, std::move(agent_name), std::move(input), out));
    return out;
}

boost::asio::awaitable<std::int64_t> Client::async_enqueue(std::string agent_name, Session input) {
    co_return co_await enqueue(st_, std::move(agent_name), std::move(input));
}

async::Lazy<Session> Client::result(std::int64_t run_id) {
    async::Lazy<Session> out;
    wait_for(st_, run_id, out);
    return out;
}

}  // namespace rath::cluster

namespace rath::cluster {

pg::ConnectionStats Client::stats() const noexcept {
    pg::ConnectionStats out = st_->store->stats();
    const pg::ConnectionStats q = st_->queue.stats();
    out.connects += q.connects;
    out.round_trips += q.round_trips;
    out.requests += q.requests;
    return out;
}

}  // namespace rath::cluster
