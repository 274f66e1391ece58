#pragma once
// One sandbox of the server: its lifecycle record (what GET /v1/sandboxes/{id} shows),
// its container once started, and execd's per-sandbox state (commands by id, code
// contexts by id). Thread safety: the record and the maps are guarded by `mu`; the
// container pointer is set once by the manager before the state turns Running and reset
// only after it is Terminated/Failed, and is read under `mu` (shared_ptr copies).
#include "container.hpp"
#include "model.hpp"
#include "state.hpp"

#include <boost/json/object.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::sandbox_server {

using Clock = std::chrono::system_clock;

struct Record {
    std::string id;
    std::string token;  // execd access token (X-EXECD-ACCESS-TOKEN)
    std::string image_uri;
    std::vector<std::string> entrypoint;
    std::map<std::string, std::string> metadata;
    std::map<std::string, std::string> resource_limits;
    Clock::time_point created_at, last_transition_at;
    std::optional<Clock::time_point> expires_at;
    State state = State::pending;
    std::string reason, message;
    std::string workspace;  // host directory
    std::string cgroup;     // cgroup name
};

// Sandbox JSON (GET) or, with `full` false, CreateSandboxResponse (no image).
[[nodiscard]] boost::json::object record_json(const Record& r, bool full = true);
// The persisted form (record_json plus the private fields); parse throws ApiError on junk.
[[nodiscard]] std::string record_to_disk(const Record& r);
[[nodiscard]] std::optional<Record> record_from_disk(std::string_view text);

class Child;

// A command started through POST /command (foreground or background).
struct Command {
    std::string id, content;
    bool background = false;
    Clock::time_point started_at;
    std::optional<Clock::time_point> finished_at;
    std::optional<int> exit_code;
    std::string error;
    std::shared_ptr<Child> child;
    // Background: the combined output, kept whole up to a cap (then the oldest lines go).
    std::string log;
    std::size_t log_dropped_lines = 0;
};

// A long-lived interpreter (python or bash) whose state persists between runs.
struct CodeContext {
    std::string id, language;
    std::shared_ptr<Child> child;
    int execution_count = 0;
    bool busy = false;
    bool dead = false;
};

class Sandbox {
public:
    explicit Sandbox(Record r) : record_(std::move(r)) {}

    [[nodiscard]] Record record() const {
        std::lock_guard lk(mu);
        return record_;
    }
    [[nodiscard]] State state() const {
        std::lock_guard lk(mu);
        return record_.state;
    }
    // Applies `e` with reason/message; returns the new state or nullopt (conflict).
    std::optional<State> apply(Event e, std::string reason = {}, std::string message = {});
    // Edits the record under the lock.
    template <class F>
    void edit(F f) {
        std::lock_guard lk(mu);
        f(record_);
    }
    [[nodiscard]] std::shared_ptr<Container> container() const {
        std::lock_guard lk(mu);
        return container_;
    }
    void set_container(std::shared_ptr<Container> c) {
        std::lock_guard lk(mu);
        container_ = std::move(c);
    }

    mutable std::mutex mu;
    std::mutex persist_mu;  // one record write at a time, each of the latest record
    bool forgotten = false;  // guarded by persist_mu: deleted, its record must not come back
    std::map<std::string, std::shared_ptr<Command>> commands;  // guarded by mu
    std::map<std::string, std::shared_ptr<CodeContext>> contexts;  // guarded by mu
    std::map<std::string, std::string> default_contexts;  // language -> context id, guarded by mu

private:
    Record record_;
    std::shared_ptr<Container> container_;
};

}  // namespace rath::sandbox_server
