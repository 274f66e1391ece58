// rath-sandbox-server: serves the OpenSandbox lifecycle and execd APIs until SIGINT or
// SIGTERM, each sandbox a bubblewrap container. Prints exactly one line
// "listening on http://HOST:PORT" (flushed) so that scripts learn the port when
// --port 0 picks one. See README.md beside this file.
#include <rath/sandbox_server/program.hpp>

#include "server.hpp"

#include <rath/async/runtime.hpp>

#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

void usage(std::FILE* to, const char* program) {
    std::fprintf(to, "usage: %s [options]\n", program);
    std::fputs(
        "  --host HOST              address to listen on (default 127.0.0.1)\n"
        "  --port N                 port, 0 = any free one (default 8080)\n"
        "  --state-dir DIR          records and workspaces (default /tmp/rath-sandbox-server-UID)\n"
        "  --api-key KEY            required OPEN-SANDBOX-API-KEY (default: env OPEN_SANDBOX_API_KEY;\n"
        "                           none: no authentication of the lifecycle API)\n"
        "  --image NAME=SOURCE      accept image.uri NAME: SOURCE is host (the minimal host subset),\n"
        "                           host-ro (the whole host read-only) or an absolute root filesystem\n"
        "                           directory; repeatable; defaults: host=host, host-ro=host-ro\n"
        "  --allow-host-path DIR    host volumes may bind DIR and below; repeatable (default: none)\n"
        "  --max-sandboxes N        live sandboxes at once (default 256)\n"
        "  --max-timeout S          largest timeout / renewal in seconds (default 86400)\n"
        "  --run-as UID:GID         the sandbox user when the server is root (default 65534:65534)\n"
        "  --public-host HOST:PORT  host put into endpoint URLs (default: the request's Host)\n"
        "  --warm N                 keep N started containers of the host image ready (default 0)\n"
        "  --threads N              io threads (default 2)\n"
        "  --quiet                  print nothing but the listening line\n",
        to);
}

[[noreturn]] void die(const std::string& m) {
    std::fprintf(stderr, "rath-sandbox-server: %s\n", m.c_str());
    std::exit(2);
}

unsigned long number(std::string_view s, unsigned long max) {
    std::string c(s);
    char* end = nullptr;
    unsigned long v = std::strtoul(c.c_str(), &end, 10);
    if (c.empty() || c[0] == '-' || !end || *end || v > max) die("expected an integer from 0 to " + std::to_string(max) + ", got \"" + c + "\"");
    return v;
}

}  // namespace

namespace rath::sandbox_server {

int program_main(int argc, char** argv) {
    using namespace rath::sandbox_server;
    SandboxServerOptions o;
    o.http.port = 8080;
    o.http.max_body_bytes = std::size_t{256} << 20;
    o.sandboxes.state_dir = "/tmp/rath-sandbox-server-" + std::to_string(::geteuid());
    if (const char* k = std::getenv("OPEN_SANDBOX_API_KEY"); k && *k) o.sandboxes.api_key = k;
    std::size_t threads = 2;
    bool quiet = false;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) die(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--host") o.http.host = value();
        else if (a == "--port") o.http.port = static_cast<std::uint16_t>(number(value(), 65535));
        else if (a == "--state-dir") o.sandboxes.state_dir = std::filesystem::absolute(std::string(value())).string();
        else if (a == "--api-key") o.sandboxes.api_key = std::string(value());
        else if (a == "--image") {
            std::string v(value());
            auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0) die("--image expects NAME=SOURCE, got \"" + v + "\"");
            std::string name = v.substr(0, eq), src = v.substr(eq + 1);
            RootImage img;
            if (src == "host") img.host_view = rath::backend::HostFilesystem::minimal;
            else if (src == "host-ro") img.host_view = rath::backend::HostFilesystem::read_only;
            else if (!src.empty() && src[0] == '/' && std::filesystem::is_directory(src)) img.rootfs = src;
            else die("--image " + name + ": SOURCE must be host, host-ro or an existing absolute directory, got \"" + src + "\"");
            if (o.sandboxes.images.empty()) o.sandboxes.images = default_images();
            o.sandboxes.images[name] = img;
        } else if (a == "--allow-host-path") o.sandboxes.allowed_host_paths.emplace_back(value());
        else if (a == "--max-sandboxes") o.sandboxes.max_sandboxes = number(value(), 100000);
        else if (a == "--max-timeout") o.sandboxes.max_timeout_s = static_cast<std::int64_t>(number(value(), 10'000'000));
        else if (a == "--run-as") {
            std::string v(value());
            auto colon = v.find(':');
            if (colon == std::string::npos) die("--run-as expects UID:GID");
            o.sandboxes.run_as = std::pair<unsigned, unsigned>{static_cast<unsigned>(number(v.substr(0, colon), 4294967294ul)),
                                                               static_cast<unsigned>(number(v.substr(colon + 1), 4294967294ul))};
        } else if (a == "--public-host") o.public_host = std::string(value());
        else if (a == "--warm") o.sandboxes.warm = number(value(), 10000);
        else if (a == "--threads") threads = std::max<unsigned long>(1, number(value(), 256));
        else if (a == "--quiet") quiet = true;
        else if (a == "-h" || a == "--help") {
            usage(stdout, argv[0]);
            return 0;
        } else {
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (o.sandboxes.images.empty()) o.sandboxes.images = default_images();
    if (!quiet && ::geteuid() != 0)
        std::fprintf(stderr, "rath-sandbox-server: not root: cgroup limits, pause and disk quotas may be unavailable\n");

    rath::async::Runtime runtime(rath::async::RuntimeOptions{.threads = threads, .blocking_threads = 0, .name = "sbx"});
    SandboxServer server(std::move(o), runtime);
    try {
        server.start();
    } catch (const std::exception& e) {
        die(std::string("cannot start: ") + e.what());
    }
    std::printf("listening on %s\n", server.base_url().c_str());
    std::fflush(stdout);

    std::promise<void> stop;
    boost::asio::signal_set signals(runtime.io_context(), SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) { stop.set_value(); });
    stop.get_future().wait();
    server.stop();
    return 0;
}

}  // namespace rath::sandbox_server
