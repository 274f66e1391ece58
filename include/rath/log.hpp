#pragma once
// rath's one logger: every layer reports what it must not throw for (a retry, a loose
// config file, a tripped budget, an error nobody read, a file skipped while listing)
// through log(), never by writing to stderr itself.
//
// A record names its channel, the Python logger name of the spec where it has one:
//   rath.async              a Lazy that failed and was never read, a runtime misuse
//   rath.backend            sandbox close failures, malformed sandbox records
//   rath.config             config file permissions
//   rath.llm                retries, token budgets outside the loop
//   rath.session            dropped session errors, sandbox close failures
//   rath.session.loop       the agent loop (session.md §2.3, §2.5)
//   rath.session.persistence  unreadable session files skipped while listing
// Messages never carry secrets (API keys are redacted before they reach a message).
//
// Thread safety: every function here may be called from any thread at any time,
// including during static destruction. A sink is called on the thread that logs,
// outside any lock, so it may be called concurrently with itself and may log too;
// a sink replaced while another thread is inside it finishes that call first.
#include <functional>
#include <optional>
#include <string_view>

namespace rath {

enum class LogLevel { debug, info, warning, error, off };

struct LogRecord {
    LogLevel level;
    std::string_view channel;
    std::string_view message;  // valid only during the sink call
};

using LogSink = std::function<void(const LogRecord&)>;

// Installs `sink` and returns the previous one. An empty sink restores the default:
// one line on stderr, "<LEVEL> <channel>: <message>" (LEVEL is DEBUG, INFO, WARNING or
// ERROR), written with a single call so that lines from several threads do not mix.
LogSink set_log_sink(LogSink sink);

// Records below `min` are dropped before the sink sees them; LogLevel::off drops all.
// The default is LogLevel::info.
void set_log_level(LogLevel min) noexcept;
[[nodiscard]] LogLevel log_level() noexcept;

// Hands one record to the sink when `level` is at or above log_level() (a relaxed
// atomic read when it is not). A record at LogLevel::off is never logged. Never
// throws: what a sink throws is swallowed, since log() runs in destructors and
// completion handlers that must not fail.
void log(LogLevel level, std::string_view channel, std::string_view message) noexcept;

// The level a command line or a config names: "debug", "info", "warning", "error" or
// "off" (lower case); nullopt for anything else.
[[nodiscard]] std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;

}  // namespace rath
