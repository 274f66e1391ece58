#include <rath/log.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace rath {

namespace {

// Constant-initialized and trivially destructible: readable at any point of exit.
std::atomic<LogLevel> g_level{LogLevel::info};

struct SinkSlot {
    std::mutex mu;
    // Shared so that a sink being called on one thread stays alive when another
    // thread replaces it; null means the stderr default.
    std::shared_ptr<const LogSink> sink;
};

// Never destroyed: a session or sandbox destroyed during static destruction may still
// log through it.
SinkSlot& slot() {
    static SinkSlot& s = *new SinkSlot;
    return s;
}

const char* level_name(LogLevel level) noexcept {
    switch (level) {
        case LogLevel::debug: return "DEBUG";
        case LogLevel::info: return "INFO";
        case LogLevel::warning: return "WARNING";
        case LogLevel::error: return "ERROR";
        case LogLevel::off: break;
    }
    return "OFF";
}

void write_stderr(const LogRecord& r) {
    std::string line = level_name(r.level);
    line.reserve(line.size() + r.channel.size() + r.message.size() + 4);
    line += ' ';
    line += r.channel;
    line += ": ";
    line += r.message;
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
    std::shared_ptr<const LogSink> next;
    if (sink) next = std::make_shared<const LogSink>(std::move(sink));
    std::shared_ptr<const LogSink> prev;
    {
        std::lock_guard lk(slot().mu);
        prev = std::exchange(slot().sink, std::move(next));
    }
    // A copy: another thread may still be calling the shared one.
    return prev ? *prev : LogSink{};
}

void set_log_level(LogLevel min) noexcept { g_level.store(min, std::memory_order_relaxed); }

LogLevel log_level() noexcept { return g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view channel, std::string_view message) noexcept {
    if (level == LogLevel::off || level < g_level.load(std::memory_order_relaxed)) return;
    const LogRecord record{level, channel, message};
    try {
        std::shared_ptr<const LogSink> sink;
        {
            std::lock_guard lk(slot().mu);
            sink = slot().sink;
        }
        if (sink)
            (*sink)(record);
        else
            write_stderr(record);
    } catch (...) {
        // A failing sink (or an allocation failure) loses this record and nothing else.
    }
}

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
    if (name == "debug") return LogLevel::debug;
    if (name == "info") return LogLevel::info;
    if (name == "warning") return LogLevel::warning;
    if (name == "error") return LogLevel::error;
    if (name == "off") return LogLevel::off;
    return std::nullopt;
}

}  // namespace rath
