#include <rath/mcp/stdio_transport.hpp>

#include "lib/backend/process.hpp"
#include "lib/mcp/protocol.hpp"

#include <rath/log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <unistd.h>

extern char** environ;

namespace rath::mcp {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

constexpr auto tuple_token = asio::as_tuple(use_awaitable);
constexpr std::string_view channel = "rath.mcp";
constexpr std::size_t stderr_line_cap = 4096;

std::vector<std::string> server_environment(const StdioServerParams& p) {
    std::map<std::string, std::string> env;
    static constexpr std::string_view inherited[] = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"};
    for (char** e = environ; e && *e; ++e) {
        std::string_view kv(*e);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
        bool keep = p.inherit_environment;
        for (auto name : inherited) keep = keep || k == name;
        // A bash-exported function (value "() {...}"): the reference SDK leaves it out.
        if (!keep || v.rfind("()", 0) == 0) continue;
        env.emplace(std::string(k), std::string(v));
    }
    for (const auto& [k, v] : p.env) env[k] = v;
    std::vector<std::string> out;
    out.reserve(env.size());
    for (auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

std::string status_text(int status) {
    if (status < 0) return "was killed by signal " + std::to_string(-status) + " (" + ::strsignal(-status) + ")";
    return "exited with status " + std::to_string(status);
}

class StdioTransport final : public Transport {
public:
    explicit StdioTransport(StdioServerParams p) : params_(std::move(p)) {
        if (params_.command.empty()) throw TransportError("an MCP stdio server needs a command");
        if (params_.name.empty()) {
            params_.name = params_.command.front();
            description_ = "stdio:";
            for (const auto& a : params_.command) description_ += " " + a;
        } else {
            description_ = params_.name + " (stdio)";
        }
    }

    ~StdioTransport() override = default;  // LiveProcess kills and reaps what is left

    asio::awaitable<void> async_start() override {
        auto ex = co_await asio::this_coro::executor;
        int cwd_fd = -1;
        if (params_.cwd) {
            cwd_fd = ::open(params_.cwd->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (cwd_fd < 0)
                throw TransportError("cannot start MCP server " + description_ + ": working directory " + *params_.cwd +
                                     ": " + std::strerror(errno));
        }
        try {
            proc_ = std::make_unique<backend::detail::LiveProcess>(ex, params_.command, server_environment(params_), cwd_fd);
        } catch (const std::system_error& e) {
            if (cwd_fd >= 0) ::close(cwd_fd);
            throw TransportError("cannot start MCP server " + description_ + ": " + e.what());
        }
        if (cwd_fd >= 0) ::close(cwd_fd);
        closed_event_.emplace(ex);
        closed_event_->expires_at(asio::steady_timer::time_point::max());
        stderr_event_.emplace(ex);
        stderr_event_->expires_at(asio::steady_timer::time_point::max());
        // stderr is drained for the whole life of the process; it holds the transport
        // only through the process object, which async_close outlives.
        asio::co_spawn(ex, drain_stderr(), asio::detached);
        co_return;
    }

    asio::awaitable<void> async_send(std::string message) override {
        if (!proc_ || closing_) throw TransportError("MCP server " + description_ + " is closed");
        message.push_back('\n');
        auto [ec, n] = co_await asio::async_write(proc_->stdin_pipe(), asio::buffer(message), tuple_token);
        (void)n;
        if (ec) throw TransportError("cannot write to MCP server " + description_ + ": " + ec.message());
    }

    asio::awaitable<std::optional<std::string>> async_receive() override {
        if (!proc_) co_return std::nullopt;
        for (;;) {
            // A complete line already buffered?
            while (scan_ < buffer_.size()) {
                auto nl = buffer_.find('\n', scan_);
                if (nl == std::string::npos) {
                    scan_ = buffer_.size();
                    break;
                }
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                scan_ = 0;
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.find_first_not_of(" \t") == std::string::npos) continue;
                co_return line;
            }
            if (buffer_.size() > params_.max_line_bytes) {
                set_reason("MCP server " + description_ + " wrote a line longer than " +
                           std::to_string(params_.max_line_bytes) + " bytes");
                throw TransportError(reason());
            }
            if (eof_) co_return std::nullopt;
            char chunk[64 * 1024];
            auto [ec, n] = co_await proc_->stdout_pipe().async_read_some(asio::buffer(chunk), tuple_token);
            buffer_.append(chunk, n);
            if (ec) {
                eof_ = true;
                co_await finish_after_eof(ec);
            }
        }
    }

    asio::awaitable<void> async_close() override {
        if (!proc_) co_return;
        const bool first = !closing_;
        int status = co_await terminate();
        if (first) set_reason("the client closed the connection (server " + status_text(status) + ")");
    }

    std::string close_reason() const override { return reason(); }
    std::string describe() const override { return description_; }

private:
    asio::awaitable<void> finish_after_eof(const boost::system::error_code& ec) {
        std::string why;
        if (closing_) {
            why = "the client closed the connection";
        } else {
            // The server's stdout ended: usually it exited. Give it a moment to be seen
            // exiting so the reason can say how.
            auto ex = co_await asio::this_coro::executor;
            asio::steady_timer t(ex, std::chrono::milliseconds(500));
            using namespace boost::asio::experimental::awaitable_operators;
            bool exited = proc_->exited();
            if (!exited) {
                auto r = co_await (proc_->async_wait_exit() || t.async_wait(use_awaitable));
                exited = r.index() == 0;
            }
            if (exited) {
                int status = co_await terminate();
                why = "the server process " + status_text(status);
            } else {
                why = "the server closed its stdout (" + ec.message() + ")";
            }
        }
        if (!buffer_.empty())
            why += "; an unterminated last line of " + std::to_string(buffer_.size()) + " bytes was dropped: " +
                   detail::quote(buffer_);
        buffer_.clear();
        if (reason().empty()) set_reason(why);
    }

    // Ends the process once (later callers wait for the first), including the stderr
    // drain, so that nothing of this transport is in use once it returns.
    asio::awaitable<int> terminate() {
        if (closing_) {
            if (!closed_) (void)co_await closed_event_->async_wait(tuple_token);
            co_return status_;
        }
        closing_ = true;
        status_ = co_await proc_->async_terminate(params_.close_grace);
        if (!stderr_done_) (void)co_await stderr_event_->async_wait(tuple_token);
        closed_ = true;
        closed_event_->cancel();
        co_return status_;
    }

    asio::awaitable<void> drain_stderr() {
        auto* proc = proc_.get();
        std::string pending;
        char chunk[16 * 1024];
        for (;;) {
            auto [ec, n] = co_await proc->stderr_pipe().async_read_some(asio::buffer(chunk), tuple_token);
            pending.append(chunk, n);
            std::size_t pos;
            while ((pos = pending.find('\n')) != std::string::npos) {
                log_stderr(std::string_view(pending).substr(0, pos));
                pending.erase(0, pos + 1);
            }
            if (pending.size() > stderr_line_cap) {
                log_stderr(pending);
                pending.clear();
            }
            if (ec) break;
        }
        if (!pending.empty()) log_stderr(pending);
        stderr_done_ = true;
        stderr_event_->cancel();
    }

    void log_stderr(std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) return;
        std::string msg = "MCP server " + params_.name + " stderr: ";
        msg.append(line.substr(0, stderr_line_cap));
        if (line.size() > stderr_line_cap) msg += "...(" + std::to_string(line.size()) + " bytes)";
        log(LogLevel::info, channel, msg);
    }

    std::string reason() const {
        std::lock_guard lock(reason_mutex_);
        return reason_;
    }
    void set_reason(std::string r) {
        std::lock_guard lock(reason_mutex_);
        if (reason_.empty()) reason_ = std::move(r);
    }

    StdioServerParams params_;
    std::string description_;
    std::unique_ptr<backend::detail::LiveProcess> proc_;
    std::optional<asio::steady_timer> closed_event_, stderr_event_;
    bool stderr_done_ = false;
    int status_ = 0;
    std::string buffer_;
    std::size_t scan_ = 0;
    bool eof_ = false;
    bool closing_ = false;
    bool closed_ = false;
    mutable std::mutex reason_mutex_;
    std::string reason_;
};

}  // namespace

std::unique_ptr<Transport> make_stdio_transport(StdioServerParams params) {
    return std::make_unique<StdioTransport>(std::move(params));
}

}  // namespace rath::mcp
