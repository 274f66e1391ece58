#pragma once
// rath::cluster::Client: agents run by rath-worker processes (tools/rath-worker) through
// rath's PostgreSQL run queue, with the lazy results of one machine.
//
//   rath::cluster::Client cluster({.conninfo = "host=db dbname=rath"});
//   async::Lazy<Session> out = cluster.submit("summarize", Session::from_user_message("..."));
//   Session s = out.get();   // waits for a worker; the run's error is thrown here
//
// submit() returns at once. On the runtime it then stores the input session (its rows
// once it is ready, so a pending session may be submitted) in the database's session
// store (rath/pg/session_store.hpp), and enqueues a run whose payload is
// {"agent": name, "input_session_id": id} (rath/pg/run_queue.hpp). A worker that knows
// the agent by name (its config.json's "agents" section) runs it, stores the output
// session and completes the run with {"session_id": id}; the lazy value is then that
// session, loaded from the store. result(run_id) does the same for any run of the
// queue, from any process.
//
// Waiting: one watcher per client, started by the first wait and kept until the client
// is destroyed, LISTENs on the queue's finished channel (workers NOTIFY it when they
// complete or fail a run) and, per wake-up, looks in one query at the runs the
// notifications name (each carries its run's id) that it waits for; `poll_interval` is a
// fallback for a lost notification: after it passes quietly, and when a dropped listening
// connection is remade, every run waited for is looked at again. Outputs are loaded side by
// side on the runtime.
//
// Errors (thrown by the lazy value's get()/async_get(), once set): RunFailed when the
// worker failed the run (unknown agent, the agent loop's error); rath::pg::PgError or
// PersistenceError when storing the input, enqueueing or loading the output failed;
// ClientClosed when the client was destroyed first. What this does not do: place runs
// on particular workers, cancel a queued or running run, or time a run out.
//
// Thread safety: every member function may be called from any thread at once.
// Destroying the client fails the values still waiting with ClientClosed (the runs
// themselves go on in the workers, and result() from another client still finds them).
#include <rath/async/lazy.hpp>
#include <rath/error.hpp>
#include <rath/pg/connection.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace rath::async {
class Runtime;
}

namespace rath::cluster {

struct ClientOptions {
    std::string conninfo;           // libpq connection string or URI
    std::string schema = "public";  // where rath's tables are (shared with the workers)
    std::string queue = "default";  // the queue the workers take runs from
    std::chrono::milliseconds poll_interval{1000};
    async::Runtime* runtime = nullptr;  // default: Runtime::default_runtime()
};

// The worker failed the run; what() is "run <id> failed: <the worker's error text>".
class RunFailed : public Error {
public:
    RunFailed(std::int64_t run_id, std::string error);
    std::int64_t run_id() const noexcept { return run_id_; }
    const std::string& error() const noexcept { return error_; }

private:
    std::int64_t run_id_;
    std::string error_;
};

class ClientClosed : public Error {
public:
    using Error::Error;
};

class Client {
public:
    // Never blocks: connections are made by the first calls.
    explicit Client(ClientOptions options);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // The output of `agent_name` run by a worker on `input` (see the file comment).
    [[nodiscard]] async::Lazy<Session> submit(std::string agent_name, Session input);
    // Stores `input` and enqueues the run; returns the run's id once it is queued.
    [[nodiscard]] boost::asio::awaitable<std::int64_t> async_enqueue(std::string agent_name, Session input);
    // The output of run `run_id`, whoever enqueued it.
    [[nodiscard]] async::Lazy<Session> result(std::int64_t run_id);
    // Database round trips and connections of the client's store and queue so far.
    [[nodiscard]] pg::ConnectionStats stats() const noexcept;

    struct State;

private:
    std::shared_ptr<State> st_;
};

}  // namespace rath::cluster
