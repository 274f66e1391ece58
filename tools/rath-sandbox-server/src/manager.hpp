#pragma once
// The lifecycle half of rath-sandbox-server: creates sandboxes (validation, image and
// volume resolution, container start in the background), lists and filters them,
// pauses, resumes, renews, expires and deletes them, persists every record under the
// state directory, and on start reaps what a previous server process left there
// (records of live sandboxes become Failed with reason SERVER_RESTARTED).
//
// Thread safety: every member may be called from any io thread. Blocking work (file
// system, cgroups, process teardown) runs on the runtime's blocking pool.
// Errors: ApiError with the HTTP status and ErrorResponse code.
#include "container.hpp"
#include "model.hpp"
#include "sandbox.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::async {
class Runtime;
}

namespace rath::sandbox_server {

struct ServerOptions {
    std::string state_dir;                  // records and workspaces live here (created)
    std::optional<std::string> api_key;     // OPEN-SANDBOX-API-KEY; unset: no authentication
    std::map<std::string, RootImage> images;  // accepted image.uri values
    std::vector<std::string> allowed_host_paths;  // host volume prefixes; empty: host volumes refused
    std::size_t max_sandboxes = 256;        // live (not Terminated/Failed) at once
    std::int64_t max_timeout_s = 86400;
    std::chrono::seconds retain_final{300};  // how long Terminated/Failed records stay listed
    std::optional<std::pair<unsigned, unsigned>> run_as = std::pair<unsigned, unsigned>{65534, 65534};
    std::uint64_t default_pids = 512;       // pids.max when resourceLimits has no "pids"
    std::uint64_t tmp_bytes = 256ull << 20;
    std::string bwrap = "bwrap";
    // Containers of the "host" image kept started and waiting, so that a create without
    // network, volumes or a disk limit only applies its limits and starts its
    // entrypoint in one (0: every sandbox starts its own bwrap).
    std::size_t warm = 0;
};

// The images every server accepts unless told otherwise: "host" (the minimal host
// subset) and "host-ro" (the whole host read-only, secrets masked).
[[nodiscard]] std::map<std::string, RootImage> default_images();

class Manager {
public:
    Manager(ServerOptions options, rath::async::Runtime& runtime);
    ~Manager();
    Manager(const Manager&) = delete;
    Manager& operator=(const Manager&) = delete;

    [[nodiscard]] const ServerOptions& options() const noexcept { return options_; }
    [[nodiscard]] rath::async::Runtime& runtime() noexcept { return runtime_; }

    // Loads the records of the state directory and reaps what they left running.
    boost::asio::awaitable<void> async_recover();
    // Validates and registers a sandbox (Pending) and starts its container in the
    // background. Returns the record as created.
    boost::asio::awaitable<Record> async_create(CreateRequest req);
    // The sandbox or ApiError 404.
    [[nodiscard]] std::shared_ptr<Sandbox> find(const std::string& id) const;
    [[nodiscard]] std::vector<Record> list() const;
    // Stops and removes the sandbox (DELETE): 204 semantics; 404 when unknown.
    boost::asio::awaitable<void> async_delete(std::string id);
    boost::asio::awaitable<void> async_pause(std::string id);
    boost::asio::awaitable<void> async_resume(std::string id);
    boost::asio::awaitable<Clock::time_point> async_renew(std::string id, Clock::time_point expires_at);
    // Stops the sandboxes whose expiresAt passed and forgets final records older than
    // retain_final. Called periodically by the server.
    boost::asio::awaitable<void> async_sweep();
    // Stops every sandbox (server shutdown).
    boost::asio::awaitable<void> async_stop_all();

    // Live sandboxes (not Terminated/Failed).
    [[nodiscard]] std::size_t live_count() const;
    // Warm containers ready now.
    [[nodiscard]] std::size_t warm_count() const;

private:
    boost::asio::awaitable<void> async_launch(std::shared_ptr<Sandbox> sb, ContainerSpec spec);
    // The end of a cold or warm start: on failure the container goes and the sandbox is
    // Failed; else the container is published (unless stopped meanwhile) and supervised.
    boost::asio::awaitable<void> async_finish_start(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c,
                                                    std::string failure);
    boost::asio::awaitable<void> async_launch_warm(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c,
                                                   CgroupLimits limits, std::vector<std::string> env,
                                                   std::vector<std::string> entrypoint);
    boost::asio::awaitable<void> async_supervise(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c);
    boost::asio::awaitable<void> async_make_warm();
    void refill();
    bool stopping_now() const;
    ContainerSpec base_spec(const std::string& id) const;
    boost::asio::awaitable<void> async_stop(std::shared_ptr<Sandbox> sb, std::string reason, std::string message);
    boost::asio::awaitable<void> async_persist(std::shared_ptr<Sandbox> sb);
    void forget(const std::string& id);

    ServerOptions options_;
    rath::async::Runtime& runtime_;
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<Sandbox>> sandboxes_;
    std::size_t reserved_ = 0;  // creations between validation and registration
    std::vector<std::shared_ptr<Container>> warm_;  // started, waiting for an entrypoint
    std::size_t warming_ = 0;                      // being started for warm_
    bool stopping_ = false;
};

}  // namespace rath::sandbox_server
