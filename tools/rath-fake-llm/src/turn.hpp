#pragma once
// Turn: the assistant reply decided for one chat request, before it is rendered in
// the OpenAI or Anthropic wire format. Kept per connection and reused, so that its
// strings keep their capacity across requests.
#include "tools/rath-fake-llm/src/fault.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::fake_llm::detail {

struct ToolCallOut {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text (invalid on purpose under Fault::bad_tool_json)
};

struct Turn {
    std::string text;
    bool has_text = false;  // false: content null (a tool-call-only turn)
    std::vector<ToolCallOut> calls;
    std::size_t call_count = 0;  // calls[0, call_count) are live; the rest keep capacity
    std::string_view finish;  // OpenAI vocabulary: stop, tool_calls, length, content_filter
    std::optional<std::uint64_t> prompt_tokens;
    std::optional<std::uint64_t> completion_tokens;
    std::size_t chunks = 0;  // stream pieces per text/arguments; 0 = one per word
    Fault fault = Fault::none;
    std::uint32_t retry_after = 1;  // seconds, for Fault::rate_limit
    std::string fault_message;      // overrides the default error message when set
    std::optional<std::chrono::milliseconds> latency;
    std::optional<std::chrono::milliseconds> token_delay;

    void clear() {
        text.clear();
        has_text = false;
        call_count = 0;
        finish = {};
        prompt_tokens.reset();
        completion_tokens.reset();
        chunks = 0;
        fault = Fault::none;
        retry_after = 1;
        fault_message.clear();
        latency.reset();
        token_delay.reset();
    }
    ToolCallOut& add_call() {
        if (call_count == calls.size()) calls.emplace_back();
        auto& c = calls[call_count++];
        c.id.clear();
        c.name.clear();
        c.arguments.clear();
        return c;
    }
};

}  // namespace rath::fake_llm::detail
