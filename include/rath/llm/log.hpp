#pragma once
// Where the llm and config layers send their few warnings (retries, loose config
// file permissions, budget trips). Default: one line on stderr. Never given secrets.
#include <functional>
#include <string_view>

namespace rath::llm {

enum class LogLevel { info, warning };
using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink; an empty function restores the stderr default. Returns the old one.
LogSink set_log_sink(LogSink sink);
void log(LogLevel level, std::string_view message);

}  // namespace rath::llm
