#pragma once
// A fake LLM server as a child process (rath-fake-llm next to this binary), and a
// blocking control client for the /stats and /config routes both fake servers share
// (rath-fake-llm and the peers' fake_llm.mjs).
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace rath::bench {

// "http://host:port[/v1]" → host, port.
struct HostPort {
    std::string host;
    std::string port;
};

inline HostPort parse_host_port(const std::string& url) {
    std::string rest = url;
    if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
    else throw std::invalid_argument("only http:// base URLs are supported: " + url);
    rest = rest.substr(0, rest.find('/'));
    auto colon = rest.rfind(':');
    if (colon == std::string::npos) return {rest, "80"};
    return {rest.substr(0, colon), rest.substr(colon + 1)};
}

// One blocking request on a fresh connection; returns the body (throws on non-2xx).
inline std::string control_call(const std::string& base_url, const std::string& method, const std::string& path) {
    namespace http = boost::beast::http;
    auto hp = parse_host_port(base_url);
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    boost::asio::ip::tcp::socket socket(io);
    boost::asio::connect(socket, resolver.resolve(hp.host, hp.port));
    http::request<http::string_body> req(method == "POST" ? http::verb::post : http::verb::get, path, 11);
    req.set(http::field::host, hp.host + ":" + hp.port);
    req.set(http::field::connection, "close");
    req.prepare_payload();
    http::write(socket, req);
    boost::beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(socket, buf, res);
    boost::system::error_code ec;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    if (res.result_int() / 100 != 2)
        throw std::runtime_error(method + " " + path + " answered " + std::to_string(res.result_int()));
    return std::move(res.body());
}

// A number field of a flat JSON object ("in_flight":12) — enough for the /stats body.
inline double json_number(const std::string& body, const std::string& key, double fallback = -1) {
    auto k = body.find("\"" + key + "\"");
    if (k == std::string::npos) return fallback;
    auto colon = body.find(':', k);
    if (colon == std::string::npos) return fallback;
    const char* p = body.c_str() + colon + 1;
    while (*p == ' ') ++p;
    char* end = nullptr;
    double v = std::strtod(p, &end);
    return end == p ? fallback : v;
}

inline std::string self_dir() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    std::string p(buf, static_cast<std::size_t>(n));
    return p.substr(0, p.rfind('/'));
}

// A child process whose stdout we read (the first line) and which is stopped with
// SIGTERM when the handle goes away.
class ChildProcess {
public:
    ChildProcess(const std::vector<std::string>& argv) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        int rc = posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        if (rc != 0) {
            close(fds[0]);
            throw std::runtime_error("cannot start " + argv[0] + ": " + std::to_string(rc));
        }
        out_ = fds[0];
    }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            wait();
        }
        if (out_ >= 0) close(out_);
    }

    // Next line of the child's stdout ("" at EOF).
    std::string read_line() {
        std::string line;
        char c;
        while (read(out_, &c, 1) == 1) {
            if (c == '\n') return line;
            line += c;
        }
        return line;
    }
    pid_t pid() const { return pid_; }
    int wait() {
        int status = 0;
        if (pid_ > 0) waitpid(pid_, &status, 0);
        pid_ = -1;
        return status;
    }

private:
    pid_t pid_ = -1;
    int out_ = -1;
};

// rath-fake-llm on a free loopback port; base_url() is "http://127.0.0.1:PORT/v1".
class FakeServerProcess {
public:
    FakeServerProcess(long latency_ms, int threads)
        : proc_({self_dir() + "/rath-fake-llm", "--port", "0", "--latency-ms", std::to_string(latency_ms), "--threads",
                 std::to_string(threads), "--quiet"}) {
        std::string line = proc_.read_line();
        const std::string prefix = "listening on ";
        if (line.rfind(prefix, 0) != 0) throw std::runtime_error("rath-fake-llm did not start: '" + line + "'");
        url_ = line.substr(prefix.size()) + "/v1";
    }
    const std::string& base_url() const { return url_; }

private:
    ChildProcess proc_;
    std::string url_;
};

}  // namespace rath::bench
