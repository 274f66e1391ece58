#include <rath/llm/log.hpp>
#include <rath/async/detail/immortal.hpp>

#include <iostream>
#include <mutex>
#include <string>

namespace rath::llm {
namespace {
std::mutex& sink_mu() {
    static std::mutex m;
    return m;
}
LogSink& sink() {
    static async::detail::Immortal<LogSink> s;
    return *s;
}
}  // namespace

LogSink set_log_sink(LogSink s) {
    std::lock_guard lk(sink_mu());
    LogSink old = std::move(sink());
    sink() = std::move(s);
    return old;
}

void log(LogLevel level, std::string_view message) {
    LogSink s;
    {
        std::lock_guard lk(sink_mu());
        s = sink();
    }
    if (s) {
        s(level, message);
        return;
    }
    std::string line = level == LogLevel::warning ? "rath: warning: " : "rath: ";
    line.append(message);
    line.push_back('\n');
    std::cerr << line;
}

}  // namespace rath::llm
