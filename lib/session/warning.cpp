#include <rath/session/warning.hpp>

#include <cstdio>
#include <mutex>
#include <string>

namespace rath {

namespace {
std::mutex g_mu;
SessionWarningHandler g_handler;
}  // namespace

SessionWarningHandler set_session_warning_handler(SessionWarningHandler handler) {
    std::lock_guard lk(g_mu);
    auto prev = std::move(g_handler);
    g_handler = std::move(handler);
    return prev;
}

void session_warning(std::string_view message) {
    SessionWarningHandler h;
    {
        std::lock_guard lk(g_mu);
        h = g_handler;
    }
    if (h) {
        h(message);
        return;
    }
    std::string line = "rath: warning: ";
    line.append(message);
    line += '\n';
    std::fputs(line.c_str(), stderr);
}

}  // namespace rath
