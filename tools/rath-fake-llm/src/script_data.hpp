#pragma once
// The parsed form of a script (see include/rath/fake_llm/script.hpp) and the
// runner that applies it to requests. Every element remembers its line for
// diagnostics.
#include <rath/fake_llm/script.hpp>

#include "tools/rath-fake-llm/src/fault.hpp"
#include "tools/rath-fake-llm/src/request.hpp"
#include "tools/rath-fake-llm/src/turn.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::fake_llm::detail {

struct ScriptToolCall {
    std::string id;  // empty: generated
    std::string name;
    std::string arguments;  // JSON text, may contain {{last}}
};

struct Respond {
    std::optional<std::string> text;  // may contain {{last}}
    std::vector<ScriptToolCall> tool_calls;
    std::string_view finish;  // OpenAI vocabulary; empty: derived from the content
    std::optional<std::uint64_t> prompt_tokens;
    std::optional<std::uint64_t> completion_tokens;
    std::optional<std::chrono::milliseconds> latency;
    std::optional<std::chrono::milliseconds> token_delay;
    Fault fault = Fault::none;
    std::optional<std::uint32_t> retry_after;
    std::string message;  // error message for faults
    std::size_t chunks = 0;
    std::size_t line = 0;
};

struct Match {
    std::optional<std::string> role;
    std::optional<std::string> contains;
    std::optional<std::string> equals;
    std::optional<std::string> model;
    std::optional<std::string> tool_call_id;
    std::optional<Api> endpoint;
};

struct Rule {
    Match match;
    Respond respond;
    std::optional<std::uint64_t> times;  // how often it may fire; unlimited when absent
    std::size_t line = 0;
};

enum class Exhausted : std::uint8_t { error, repeat_last, cycle, fanout };

}  // namespace rath::fake_llm::detail

namespace rath::fake_llm::detail {

struct ScriptData {
    std::string source;
    std::vector<Rule> rules;
    std::vector<Respond> responses;
    Exhausted when_exhausted = Exhausted::error;
    std::vector<std::string> models;
};

// Applies a script to requests: the first rule that matches the last message (and
// has firings left) answers; otherwise the next ordered response. Thread-safe.
class ScriptRunner {
public:
    explicit ScriptRunner(std::shared_ptr<const ScriptData> data);

    enum class Outcome { answered, exhausted, fallback };  // fallback: use the fan-out workload
    Outcome decide(const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq, std::string& error);
    void reset();

private:
    std::shared_ptr<const ScriptData> data_;
    std::mutex mu_;
    std::size_t cursor_ = 0;
    std::vector<std::uint64_t> fired_;
};

// Fills `turn` from a script response for `req` (ids from `seq`).
void apply_respond(const Respond& r, const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq);

}  // namespace rath::fake_llm::detail
