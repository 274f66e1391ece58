// The opensandbox backend through a faulty front: a loopback HTTP server that forwards
// lifecycle requests to a real rath-sandbox-server but answers chosen ones itself with
// 5xx or 409, or rewrites the sandbox state into one the client does not know. What is
// safe to retry (status, endpoint, delete) is retried; a create is not, unless the
// server said 503. With execd routed through the front as well, it also counts what
// the backend runs in the sandbox (the one command at open).
#include "backend/backend_support.hpp"

#include <rath/backend/opensandbox.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_server.hpp>

#include "lib/backend/opensandbox_wire.hpp"

#include <boost/json.hpp>

#include <atomic>
#include <mutex>

using namespace rath::test;
namespace rb = rath::backend;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

struct Fault {
    std::string method;
    std::string path;   // "/v1/sandboxes/*" is one sandbox's path (nothing after the id);
                        // else matched as a substring
    int status = 0;     // the answer given instead of forwarding; 0: forward
    std::string state;  // forward, then rewrite status.state to this
    int count = 1;
};

Fault fail(std::string method, std::string path, int status, int count = 1) {
    return Fault{std::move(method), std::move(path), status, std::string(), count};
}
Fault rewrite_state(std::string path, std::string state) {
    return Fault{"GET", std::move(path), 0, std::move(state), 1};
}

bool matches(const std::string& pattern, const std::string& path) {
    const std::string one = "/v1/sandboxes/*";
    if (pattern == one)
        return path.rfind("/v1/sandboxes/", 0) == 0 && path.size() > 14 && path.find('/', 14) == std::string::npos;
    return path.find(pattern) != std::string::npos;
}

class FaultyFront {
public:
    // `route_execd`: endpoint answers are rewritten to point at the front, so that execd
    // requests pass through it too (and show in seen()).
    FaultyFront(const SandboxServerProcess& upstream, std::vector<Fault> faults, bool route_execd = false)
        : upstream_(upstream.url()), upstream_domain_(upstream.domain()), route_execd_(route_execd),
          faults_(std::move(faults)),
          client_(rath::net::HttpClientOptions{.proxy = std::string(), .no_proxy = std::string()}),
          server_([this](rath::net::ServerRequest& req, rath::net::ServerExchange& ex) -> asio::awaitable<void> {
              co_await handle(req, ex);
          }) {
        server_.start();
    }
    std::string domain() const { return "127.0.0.1:" + std::to_string(server_.port()); }
    int injected() const { return injected_; }
    int rewritten() const { return rewritten_; }
    std::vector<std::string> seen() const {
        std::lock_guard lk(mu_);
        return seen_;
    }

private:
    // The fault this request meets (consumed), if any.
    std::optional<Fault> take(const rath::net::ServerRequest& req) {
        std::lock_guard lk(mu_);
        std::string path(req.path());
        seen_.push_back(req.method + " " + path);
        for (auto& f : faults_) {
            if (f.count <= 0 || f.method != req.method || !matches(f.path, path)) continue;
            --f.count;
            return f;
        }
        return std::nullopt;
    }

    asio::awaitable<void> handle(rath::net::ServerRequest& req, rath::net::ServerExchange& ex) {
        auto fault = take(req);
        std::vector<rath::net::HttpHeader> type{{"Content-Type", "application/json"}};
        if (fault && fault->status != 0) {
            ++injected_;
            std::string body = R"({"code":"FRONT::INJECTED","message":"injected fault )" + std::to_string(fault->status) + "\"}";
            co_await ex.respond(fault->status, std::move(type), std::move(body));
            co_return;
        }
        rath::net::HttpRequest fwd;
        fwd.method = req.method;
        fwd.url = upstream_ + req.target;
        for (auto& h : req.headers) {
            std::string n = h.name;
            for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (n != "host" && n != "content-length" && n != "connection") fwd.headers.push_back(h);
        }
        fwd.body = std::move(req.body);
        rath::net::HttpResponse resp;
        co_await client_.async_request(fwd, resp);
        std::string body = resp.body;
        if (route_execd_ && resp.status == 200 && req.path().find("/endpoints/") != std::string_view::npos) {
            auto v = json::parse(body);
            auto& ep = v.as_object()["endpoint"];
            std::string target(ep.as_string());
            if (target.rfind(upstream_domain_, 0) == 0) ep = domain() + target.substr(upstream_domain_.size());
            body = json::serialize(v);
        }
        if (fault && !fault->state.empty() && resp.status == 200) {
            auto v = json::parse(body);
            v.as_object()["status"].as_object()["state"] = fault->state;
            body = json::serialize(v);
            ++rewritten_;
        }
        co_await ex.respond(resp.status, std::move(type), std::move(body));
    }

    std::string upstream_, upstream_domain_;
    bool route_execd_ = false;
    mutable std::mutex mu_;
    std::vector<Fault> faults_;
    std::vector<std::string> seen_;
    std::atomic<int> injected_{0}, rewritten_{0};
    rath::net::HttpClient client_;
    rath::net::HttpServer server_;
};

rb::OpenSandboxBackend& through(FaultyFront& front) {
    auto& b = dynamic_cast<rb::OpenSandboxBackend&>(fresh_backend("opensandbox"));
    auto o = b.options();
    o.domain = front.domain();
    b.set_options(o);
    return b;
}

struct Reset {
    ~Reset() { rb::testing::reset_backend_instances(); }
};

}  // namespace

TEST_CASE("5xx and 409 answers to status, endpoint and delete are retried, and an unknown state is waited out") {
    if (!opensandbox_runs()) return;
    Reset reset;
    FaultyFront front(shared_sandbox_server(),
                      {fail("GET", "/v1/sandboxes/*", 500, 2), fail("GET", "/endpoints/", 502),
                       rewrite_state("/v1/sandboxes/*", "Migrating"), fail("DELETE", "/v1/sandboxes/*", 409, 2)});
    auto& b = through(front);
    auto sb = b.open();
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo through the front"))).stdout_data == "through the front\n");
    b.close(sb);
    CHECK(front.injected() == 5);
    CHECK(front.rewritten() == 1);
    // The DELETE went through in the end: the sandbox is gone on the real server.
    rath::net::HttpClient direct(rath::net::HttpClientOptions{.proxy = std::string(), .no_proxy = std::string()});
    rath::net::HttpRequest get;
    get.method = "GET";
    get.url = shared_sandbox_server().url() + "/v1/sandboxes/" + sb->handle();
    get.headers.push_back({"OPEN-SANDBOX-API-KEY", shared_sandbox_server().api_key()});
    auto res = direct.request(get);
    bool gone = res.status == 404 || res.body.find("Terminated") != std::string::npos ||
                res.body.find("Stopping") != std::string::npos;
    CHECK(gone);
}

TEST_CASE("a create answered 500 is not sent again, and open names the server's error") {
    if (!opensandbox_runs()) return;
    Reset reset;
    FaultyFront front(shared_sandbox_server(), {fail("POST", "/v1/sandboxes", 500)});
    auto& b = through(front);
    CHECK_THROWS_WITH_AS((void)b.open(), doctest::Contains("injected fault 500"), rb::BackendError);
    CHECK(front.injected() == 1);
    int creates = 0;
    for (auto& s : front.seen())
        if (s == "POST /v1/sandboxes") ++creates;
    CHECK(creates == 1);
}

TEST_CASE("a create answered 503 is tried again and the sandbox opens") {
    if (!opensandbox_runs()) return;
    Reset reset;
    FaultyFront front(shared_sandbox_server(), {fail("POST", "/v1/sandboxes", 503)});
    auto& b = through(front);
    auto sb = b.open();
    CHECK(front.injected() == 1);
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo second try"))).stdout_data == "second try\n");
    b.close(sb);
}

namespace {
// Commands the front saw sent to execd.
int commands_run(const FaultyFront& front) {
    int n = 0;
    for (auto& s : front.seen())
        if (s.rfind("POST ", 0) == 0 && s.size() > 8 && s.compare(s.size() - 8, 8, "/command") == 0) ++n;
    return n;
}
}  // namespace

TEST_CASE("open runs exactly one command, which writes the kernel wake-up file and creates the workspace") {
    if (!opensandbox_runs()) return;
    Reset reset;
    FaultyFront front(shared_sandbox_server(), {}, true);
    auto& b = through(front);
    auto sb = b.open();
    CHECK(commands_run(front) == 1);
    const std::string file = "profile_default/startup/" + std::string(rb::opensandbox::kernel_wakeup_file);
    // rath-sandbox-server's IPYTHONDIR (/tmp/.ipython: never HOME, which is the workspace
    // and may be bound from the host); the workspace exists (no bind was asked for) and
    // holds no .ipython.
    auto r = as<rb::CommandResult>(sb->dispatch(
        shell("cat \"$IPYTHONDIR/" + file + "\" && cd /workspace && pwd && test ! -e /workspace/.ipython && echo clean")));
    CHECK(r.stdout_data == std::string(rb::opensandbox::kernel_wakeup_source()) + "/workspace\nclean\n");
    // The file is valid Python and, outside a kernel, does nothing.
    auto run = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{
        .code = "import os\nexec(open(os.environ['IPYTHONDIR'] + '/" + file + "').read())\nprint('ran')"}));
    CHECK(run.stdout_data == "ran\n");
    CHECK(run.stderr_data.empty());
    CHECK_FALSE(run.error.has_value());
    b.close(sb);
    // $IPYTHONDIR set in the sandbox's environment: the file goes there.
    rb::SandboxSpec spec;
    spec.env = std::map<std::string, std::string>{{"IPYTHONDIR", "/tmp/rath-ipython"}};
    auto other = b.open(spec);
    CHECK(commands_run(front) == 3);  // the first sandbox's two calls, then this open's one
    CHECK(as<rb::FileContent>(other->dispatch(rb::FilesRead{.path = "/tmp/rath-ipython/" + file})).data ==
          rb::opensandbox::kernel_wakeup_source());
    b.close(other);
}
