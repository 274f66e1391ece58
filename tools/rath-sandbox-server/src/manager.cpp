#include "manager.hpp"

#include "lib/config/atomic_file.hpp"
#include "lib/session/uuid.hpp"

#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/random.h>

namespace rath::sandbox_server {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using rath::async::Runtime;

namespace {

std::string random_token() {
    unsigned char b[24];
    std::size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
        if (n > 0) got += static_cast<std::size_t>(n);
    }
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char c : b) {
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
    return out;
}

std::string records_dir(const ServerOptions& o) { return o.state_dir + "/sandboxes"; }
std::string record_path(const ServerOptions& o, const std::string& id) { return records_dir(o) + "/" + id + ".json"; }

bool under(const std::string& path, const std::string& prefix) {
    if (prefix == "/") return true;
    return path == prefix || (path.size() > prefix.size() && path.starts_with(prefix) && path[prefix.size()] == '/');
}

std::string format_prefixes(const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", '" : "'") + v[i] + "'";
    return s + "]";
}

// Host volumes: the resolved path (symlinks followed) must stay under an allowed prefix
// (also resolved); a missing directory is created, as the OpenSandbox server does.
std::vector<BindMount> resolve_volumes(const std::vector<Volume>& vols, const std::vector<std::string>& allowed) {
    std::vector<BindMount> out;
    std::vector<std::string> prefixes;
    for (auto& p : allowed) {
        std::error_code ec;
        auto c = fs::weakly_canonical(p, ec);
        prefixes.push_back(ec ? p : c.string());
    }
    for (auto& v : vols) {
        std::string path = v.host_path;
        if (!v.sub_path.empty()) path += "/" + v.sub_path;
        std::error_code ec;
        std::string lexical = fs::path(path).lexically_normal().string();
        while (lexical.size() > 1 && lexical.back() == '/') lexical.pop_back();
        bool lexical_ok = false;
        for (auto& p : allowed)
            if (under(lexical, fs::path(p).lexically_normal().string())) lexical_ok = true;
        if (!lexical_ok || allowed.empty())
            throw ApiError(400, codes::host_path_not_allowed,
                           "Host path '" + path + "' is not under any allowed prefix. Allowed prefixes: " +
                               format_prefixes(allowed));
        fs::create_directories(lexical, ec);
        auto canonical = fs::canonical(lexical, ec);
        if (ec) throw ApiError(400, codes::invalid_host_path, "Host path '" + path + "' cannot be used: " + ec.message());
        bool ok = false;
        for (auto& p : prefixes)
            if (under(canonical.string(), p)) ok = true;
        if (!ok)
            throw ApiError(400, codes::host_path_not_allowed,
                           "Host path '" + path + "' resolves to '" + canonical.string() +
                               "', which is not under any allowed prefix. Allowed prefixes: " + format_prefixes(allowed));
        if (!fs::is_directory(canonical))
            throw ApiError(400, codes::invalid_host_path, "Host path '" + path + "' is not a directory");
        out.push_back(BindMount{canonical.string(), v.mount_path, v.read_only});
    }
    return out;
}

}  // namespace

std::map<std::string, RootImage> default_images() {
    return {{"host", RootImage{rath::backend::HostFilesystem::minimal, {}}},
            {"host-ro", RootImage{rath::backend::HostFilesystem::read_only, {}}}};
}

Manager::Manager(ServerOptions options, Runtime& runtime) : options_(std::move(options)), runtime_(runtime) {
    if (options_.images.empty()) options_.images = default_images();
}

Manager::~Manager() = default;

std::size_t Manager::live_count() const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (auto& [id, sb] : sandboxes_)
        if (!is_final(sb->state())) ++n;
    return n;
}

std::size_t Manager::warm_count() const {
    std::lock_guard lk(mu_);
    return warm_.size();
}

std::shared_ptr<Sandbox> Manager::find(const std::string& id) const {
    std::lock_guard lk(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) throw ApiError(404, codes::not_found, "Sandbox " + id + " not found");
    return it->second;
}

std::vector<Record> Manager::list() const {
    std::vector<Record> out;
    std::lock_guard lk(mu_);
    for (auto& [id, sb] : sandboxes_) out.push_back(sb->record());
    std::sort(out.begin(), out.end(), [](const Record& a, const Record& b) {
        return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
    });
    return out;
}

void Manager::forget(const std::string& id) {
    std::lock_guard lk(mu_);
    sandboxes_.erase(id);
}

asio::awaitable<void> Manager::async_persist(std::shared_ptr<Sandbox> sb) {
    std::string dir = records_dir(options_);
    auto job1 = [sb, dir] {
        std::lock_guard lk(sb->persist_mu);
        if (sb->forgotten) return;
        const Record r = sb->record();
        std::error_code ec;
        fs::create_directories(dir, ec);
        auto err = rath::detail::write_file_atomically(dir + "/" + r.id + ".json", record_to_disk(r),
                                                       {.temp_name = ".rec-XXXXXX.tmp", .mode = 0600});
        if (err) rath::log(rath::LogLevel::warning, "sandbox-server", "cannot write the record of sandbox " + r.id + ": errno " + std::to_string(err.error));
    };
    co_await runtime_.async_blocking(std::move(job1));
}

asio::awaitable<void> Manager::async_recover() {
    ServerOptions o = options_;
    auto job2 = [o] {
        std::vector<Record> out;
        std::error_code ec;
        fs::create_directories(records_dir(o), ec);
        for (auto& e : fs::directory_iterator(records_dir(o), ec)) {
            if (e.path().extension() != ".json") continue;
            std::ifstream in(e.path());
            std::stringstream ss;
            ss << in.rdbuf();
            auto r = record_from_disk(ss.str());
            if (!r) {
                rath::log(rath::LogLevel::warning, "sandbox-server", "ignoring unreadable record " + e.path().string());
                continue;
            }
            if (!is_final(r->state)) {
                // die-with-parent took the processes down with the old server; what is
                // left are cgroups, a workspace mount and files.
                Container::reap(r->cgroup, r->workspace);
                r->state = State::failed;
                r->reason = "SERVER_RESTARTED";
                r->message = "the server restarted; the sandbox's processes ended with the previous server process";
                r->last_transition_at = Clock::now();
                std::string text = record_to_disk(*r);
                (void)rath::detail::write_file_atomically(e.path(), text, {.temp_name = ".rec-XXXXXX.tmp", .mode = 0600});
            }
            out.push_back(std::move(*r));
        }
        return out;
    };
    auto found = co_await runtime_.async_blocking(std::move(job2));
    // Workspaces no record names are warm containers (or half-made sandboxes) of a
    // previous server process: their cgroups and directories go.
    std::vector<std::string> referenced;
    for (auto& r : found) referenced.push_back(r.workspace);
    auto reap_unreferenced = [o, referenced] {
        std::error_code ec;
        for (auto& e : fs::directory_iterator(o.state_dir + "/workspaces", ec)) {
            const std::string path = e.path().string();
            if (std::find(referenced.begin(), referenced.end(), path) != referenced.end()) continue;
            Container::reap("rath-sbx-" + e.path().filename().string(), path);
        }
    };
    co_await runtime_.async_blocking(std::move(reap_unreferenced));
    {
        std::lock_guard lk(mu_);
        for (auto& r : found) {
            auto id = r.id;
            sandboxes_.emplace(id, std::make_shared<Sandbox>(std::move(r)));
        }
    }
    refill();
}

ContainerSpec Manager::base_spec(const std::string& id) const {
    ContainerSpec spec;
    spec.name = "rath-sbx-" + id;
    spec.workspace = options_.state_dir + "/workspaces/" + id;
    spec.env = base_env();
    spec.tmp_bytes = options_.tmp_bytes;
    spec.run_as = options_.run_as;
    spec.bwrap = options_.bwrap;
    spec.limits.pids = options_.default_pids;
    return spec;
}

void Manager::refill() {
    std::size_t start = 0;
    {
        std::lock_guard lk(mu_);
        if (stopping_ || options_.images.find("host") == options_.images.end()) return;
        while (warm_.size() + warming_ + start < options_.warm) ++start;
        warming_ += start;
    }
    for (std::size_t i = 0; i < start; ++i) (void)runtime_.submit(async_make_warm());
}

asio::awaitable<void> Manager::async_make_warm() {
    auto ex = co_await asio::this_coro::executor;
    ContainerSpec spec = base_spec(rath::detail::new_uuid_v4());
    spec.image = options_.images.at("host");
    std::shared_ptr<Container> c;
    std::string failure;
    try {
        auto make = [spec] { return std::make_shared<Container>(spec); };
        c = co_await runtime_.async_blocking(std::move(make));
        co_await c->async_start(ex);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    bool keep = false;
    {
        std::lock_guard lk(mu_);
        --warming_;
        if (failure.empty() && !stopping_) {
            warm_.push_back(c);
            keep = true;
        }
    }
    if (!failure.empty() && !stopping_now())
        rath::log(rath::LogLevel::warning, "sandbox-server", "a warm container did not start: " + failure);
    if (!keep && c) {
        // At shutdown this may be cancelled: the container's processes then die with
        // their bwrap (die-with-parent), and the next server reaps the rest.
        try {
            auto job = [c] { c->destroy(); };
            co_await runtime_.async_blocking(std::move(job));
        } catch (const std::exception&) {
        }
    }
}

bool Manager::stopping_now() const {
    std::lock_guard lk(mu_);
    return stopping_;
}

asio::awaitable<Record> Manager::async_create(CreateRequest req) {
    auto img = options_.images.find(req.image_uri);
    if (img == options_.images.end()) {
        std::string names;
        for (auto& [k, v] : options_.images) names += (names.empty() ? "'" : ", '") + k + "'";
        throw ApiError(400, codes::image_not_found,
                       "image '" + req.image_uri + "' is not available on this server (container images are not "
                       "pulled; accepted: " + names + ")");
    }
    {
        std::lock_guard lk(mu_);
        std::size_t live = reserved_;
        for (auto& [id, sb] : sandboxes_)
            if (!is_final(sb->state())) ++live;
        if (live >= options_.max_sandboxes)
            throw ApiError(429, codes::capacity,
                           "the server runs its maximum of " + std::to_string(options_.max_sandboxes) + " sandboxes");
        ++reserved_;
    }
    struct Unreserve {
        Manager* m;
        bool armed = true;
        ~Unreserve() {
            if (!armed) return;
            std::lock_guard lk(m->mu_);
            --m->reserved_;
        }
    } unreserve{this};

    std::vector<BindMount> binds;
    if (!req.volumes.empty()) {
        auto vols = req.volumes;
        auto allowed = options_.allowed_host_paths;
        auto job3 = [vols, allowed] { return resolve_volumes(vols, allowed); };
        binds = co_await runtime_.async_blocking(std::move(job3));
    }

    Record r;
    r.id = rath::detail::new_uuid_v4();
    r.token = random_token();
    r.image_uri = req.image_uri;
    r.entrypoint = req.entrypoint;
    r.metadata = req.metadata;
    r.resource_limits = req.raw_limits;
    r.created_at = r.last_transition_at = Clock::now();
    if (req.timeout_s) r.expires_at = r.created_at + std::chrono::seconds(*req.timeout_s);
    r.state = State::pending;
    r.reason = "SANDBOX_SCHEDULED";
    r.message = "starting the container";
    r.workspace = options_.state_dir + "/workspaces/" + r.id;
    r.cgroup = "rath-sbx-" + r.id;

    std::shared_ptr<Container> warm;
    if (req.image_uri == "host" && !req.network && req.volumes.empty() && !req.limits.disk) {
        std::lock_guard lk(mu_);
        if (!warm_.empty()) {
            warm = warm_.back();
            warm_.pop_back();
        }
    }
    if (warm) {
        r.workspace = warm->spec().workspace;
        r.cgroup = warm->spec().name;
    }

    ContainerSpec spec;
    spec.name = r.cgroup;
    spec.workspace = r.workspace;
    spec.image = img->second;
    spec.entrypoint = req.entrypoint;
    spec.env = base_env();
    for (auto& [k, v] : req.env) spec.env.push_back(k + "=" + v);
    spec.network = req.network;
    spec.binds = std::move(binds);
    spec.limits = CgroupLimits{req.limits.cpu, req.limits.memory, req.limits.pids.value_or(options_.default_pids)};
    spec.disk_bytes = req.limits.disk;
    spec.tmp_bytes = options_.tmp_bytes;
    spec.run_as = options_.run_as;
    spec.bwrap = options_.bwrap;

    auto sb = std::make_shared<Sandbox>(r);
    {
        std::lock_guard lk(mu_);
        sandboxes_.emplace(r.id, sb);
        --reserved_;
        unreserve.armed = false;
    }
    co_await async_persist(sb);
    if (warm) {
        (void)runtime_.submit(async_launch_warm(sb, warm, spec.limits, spec.env, spec.entrypoint));
        refill();
    } else {
        (void)runtime_.submit(async_launch(sb, std::move(spec)));
    }
    co_return r;
}

asio::awaitable<void> Manager::async_launch(std::shared_ptr<Sandbox> sb, ContainerSpec spec) {
    auto ex = co_await asio::this_coro::executor;
    std::shared_ptr<Container> c;
    std::string failure;
    try {
        auto make = [spec] { return std::make_shared<Container>(spec); };
        c = co_await runtime_.async_blocking(std::move(make));
        co_await c->async_start(ex);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    co_await async_finish_start(std::move(sb), std::move(c), std::move(failure));
}

asio::awaitable<void> Manager::async_launch_warm(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c,
                                                 CgroupLimits limits, std::vector<std::string> env,
                                                 std::vector<std::string> entrypoint) {
    auto ex = co_await asio::this_coro::executor;
    std::string failure;
    try {
        auto adopt = [c, limits, env] { c->adopt(limits, env); };
        co_await runtime_.async_blocking(std::move(adopt));
        c->start_entry(ex, std::move(entrypoint));
    } catch (const std::exception& e) {
        failure = e.what();
    }
    co_await async_finish_start(std::move(sb), std::move(c), std::move(failure));
}

asio::awaitable<void> Manager::async_finish_start(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c,
                                                  std::string failure) {
    if (!failure.empty()) {
        if (c) {
            auto job = [c] { c->destroy(); };
            co_await runtime_.async_blocking(std::move(job));
        }
        if (sb->apply(Event::start_failed, "START_FAILED", failure)) co_await async_persist(sb);
        co_return;
    }
    // Published only once started: a stop meanwhile never races the start itself.
    sb->set_container(c);
    if (!sb->apply(Event::started, "SANDBOX_RUNNING", "the entrypoint runs")) {
        // Stopped while starting; the stop may not have seen the container.
        auto job = [c] { c->destroy(); };
        co_await runtime_.async_blocking(std::move(job));
        sb->set_container(nullptr);
        co_return;
    }
    co_await async_persist(sb);
    co_await async_supervise(sb, c);
}

asio::awaitable<void> Manager::async_supervise(std::shared_ptr<Sandbox> sb, std::shared_ptr<Container> c) {
    const int code = co_await c->async_wait_exit();
    const State s = sb->state();
    if (s == State::stopping || is_final(s)) co_return;
    std::string tail = c->output_tail();
    if (tail.size() > 2000) tail.erase(0, tail.size() - 2000);
    const bool crashed = sb->apply(Event::crashed, "ENTRYPOINT_EXITED",
                                   "the entrypoint exited with code " + std::to_string(code) + (tail.empty() ? "" : ": " + tail))
                             .has_value();
    auto job = [c] { c->destroy(); };
    co_await runtime_.async_blocking(std::move(job));
    if (!crashed) co_return;  // a stop got there first and finishes the record
    sb->set_container(nullptr);
    co_await async_persist(sb);
}

asio::awaitable<void> Manager::async_stop(std::shared_ptr<Sandbox> sb, std::string reason, std::string message) {
    if (!sb->apply(Event::stop_requested, reason, message)) co_return;
    co_await async_persist(sb);
    // A container still starting is torn down once it exists; destroy() is idempotent.
    auto c = sb->container();
    auto job7 = [c] { c->destroy(); };
    if (c) co_await runtime_.async_blocking(std::move(job7));
    {
        std::lock_guard lk(sb->mu);
        for (auto& [id, ctx] : sb->contexts) ctx->dead = true;
    }
    sb->apply(Event::stopped, reason, message);
    sb->set_container(nullptr);
    co_await async_persist(sb);
}

asio::awaitable<void> Manager::async_delete(std::string id) {
    auto sb = find(id);
    if (!is_final(sb->state())) {
        std::string reason = "USER_DELETE", message = "deleted through the API";
        co_await async_stop(sb, std::move(reason), std::move(message));
    }
    // A container still starting is destroyed by its launch once it sees the stop.
    if (auto c = sb->container()) {
        auto job8 = [c] { c->destroy(); };
        co_await runtime_.async_blocking(std::move(job8));
    }
    forget(id);
    std::string path = record_path(options_, id);
    auto job9 = [sb, path] {
        std::lock_guard lk(sb->persist_mu);
        sb->forgotten = true;
        std::error_code ec;
        fs::remove(path, ec);
    };
    co_await runtime_.async_blocking(std::move(job9));
}

asio::awaitable<void> Manager::async_pause(std::string id) {
    auto sb = find(id);
    if (!sb->apply(Event::pause_requested, "PAUSE_REQUESTED", "freezing the sandbox's processes"))
        throw ApiError(409, codes::not_running,
                       "Sandbox " + id + " is " + std::string(to_string(sb->state())) + ", only a Running sandbox can be paused");
    auto c = sb->container();
    auto job10 = [c] { return c->freeze(); };
    bool ok = c && co_await runtime_.async_blocking(std::move(job10));
    if (!ok) {
        sb->apply(Event::pause_failed, "PAUSE_FAILED", "the cgroup freezer is not available");
        co_await async_persist(sb);
        throw ApiError(500, "BWRAP::SANDBOX_PAUSE_FAILED", "cannot pause sandbox " + id + ": the cgroup freezer is not available");
    }
    sb->apply(Event::paused, "SANDBOX_PAUSED", "the sandbox's processes are frozen");
    co_await async_persist(sb);
}

asio::awaitable<void> Manager::async_resume(std::string id) {
    auto sb = find(id);
    if (!sb->apply(Event::resume_requested, "RESUME_REQUESTED", "thawing the sandbox's processes"))
        throw ApiError(409, codes::not_paused,
                       "Sandbox " + id + " is " + std::string(to_string(sb->state())) + ", only a Paused sandbox can be resumed");
    auto c = sb->container();
    auto job11 = [c] { return c->thaw(); };
    bool ok = c && co_await runtime_.async_blocking(std::move(job11));
    if (!ok) {
        sb->apply(Event::crashed, "RESUME_FAILED", "the cgroup freezer did not thaw the sandbox");
        co_await async_persist(sb);
        throw ApiError(500, "BWRAP::SANDBOX_RESUME_FAILED", "cannot resume sandbox " + id);
    }
    sb->apply(Event::resumed, "SANDBOX_RUNNING", "the entrypoint runs");
    co_await async_persist(sb);
}

asio::awaitable<Clock::time_point> Manager::async_renew(std::string id, Clock::time_point expires_at) {
    auto sb = find(id);
    const auto now = Clock::now();
    if (expires_at <= now)
        throw ApiError(400, codes::invalid_expiration, "expiresAt " + rfc3339(expires_at) + " is not in the future");
    const Record r = sb->record();
    if (is_final(r.state) || r.state == State::stopping)
        throw ApiError(409, codes::not_running, "Sandbox " + id + " is " + std::string(to_string(r.state)));
    if (expires_at > r.created_at + std::chrono::seconds(options_.max_timeout_s) + (now - r.created_at))
        throw ApiError(400, codes::invalid_expiration,
                       "expiresAt is further away than the server's maximum of " + std::to_string(options_.max_timeout_s) + " seconds");
    sb->edit([&](Record& rec) { rec.expires_at = expires_at; });
    co_await async_persist(sb);
    co_return expires_at;
}

asio::awaitable<void> Manager::async_sweep() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Sandbox>> expired, purge;
    {
        std::lock_guard lk(mu_);
        for (auto& [id, sb] : sandboxes_) {
            const Record r = sb->record();
            if (!is_final(r.state) && r.state != State::stopping && r.expires_at && *r.expires_at <= now)
                expired.push_back(sb);
            else if (is_final(r.state) && r.last_transition_at + options_.retain_final <= now)
                purge.push_back(sb);
        }
    }
    for (auto& sb : expired) {
        std::string reason = "TTL_EXPIRY", message = "the sandbox reached its expiresAt";
        co_await async_stop(sb, std::move(reason), std::move(message));
    }
    for (auto& sb : purge) {
        std::string id = sb->record().id;
        co_await async_delete(std::move(id));
    }
}

asio::awaitable<void> Manager::async_stop_all() {
    std::vector<std::shared_ptr<Sandbox>> all;
    std::vector<std::shared_ptr<Container>> warm;
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        for (auto& [id, sb] : sandboxes_) all.push_back(sb);
        warm.swap(warm_);
    }
    for (auto& c : warm) {
        auto job = [c] { c->destroy(); };
        co_await runtime_.async_blocking(std::move(job));
    }
    for (auto& sb : all)
        if (!is_final(sb->state())) {
            std::string reason = "SERVER_SHUTDOWN", message = "the server stopped";
            co_await async_stop(sb, std::move(reason), std::move(message));
        }
}

}  // namespace rath::sandbox_server
