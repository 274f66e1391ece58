#pragma once
// Errors raised by the offline LLM server rath-fake-llm.
#include <rath/error.hpp>

#include <cstddef>
#include <string>

namespace rath::fake_llm {

// A script document is malformed or names something unknown. what() reads
// "<file>:<line>: <detail>" so that the culprit can be found at a glance.
class ScriptError : public Error {
public:
    ScriptError(std::string file, std::size_t line, std::string detail);

    const std::string& file() const noexcept { return file_; }
    std::size_t line() const noexcept { return line_; }  // 1-based; 0 when unknown (e.g. unreadable file)
    const std::string& detail() const noexcept { return detail_; }

private:
    std::string file_;
    std::size_t line_;
    std::string detail_;
};

// The server could not start (address in use, bad host) or was misused
// (stop() from one of its own threads).
class ServerError : public Error {
public:
    using Error::Error;
};

}  // namespace rath::fake_llm
