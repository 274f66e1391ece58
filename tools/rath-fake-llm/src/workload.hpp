#pragma once
// The built-in behaviours: the peers' fan-out workload (the default) and echo.
#include "tools/rath-fake-llm/src/request.hpp"
#include "tools/rath-fake-llm/src/turn.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace rath::fake_llm::detail {

// Last message from the user -> one word_count({"text": <text>}) call; from a tool
// -> "done: <tool content>"; anything else -> "done: ". Tool call ids come from
// `seq` (call_N for OpenAI, toolu_fake_N for Anthropic), as in the peers' server.
void fanout_turn(const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq);

// The assistant answers with the last message's text.
void echo_turn(const ChatRequest& req, Turn& turn);

// A fresh tool call id for the request's API.
void make_call_id(Api api, std::atomic<std::uint64_t>& seq, std::string& out);

// Completion tokens as the peers count them: words of the text plus, per tool call,
// words of its arguments + 8.
std::uint64_t default_completion_tokens(const Turn& turn);

// Tool call arguments made invalid JSON (Fault::bad_tool_json).
void break_json(std::string& arguments);

}  // namespace rath::fake_llm::detail
