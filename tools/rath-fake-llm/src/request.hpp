#pragma once
// The few fields of an LLM request that the fake server needs, read with simdjson
// on-demand in one pass (no DOM): model, stream flags, tools, and per message its
// role and text (for usage) with the last message kept whole.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rath::fake_llm::detail {

enum class Api : std::uint8_t { openai, anthropic };

struct ChatRequest {
    Api api = Api::openai;
    std::string model;
    bool stream = false;
    bool include_usage = false;  // OpenAI stream_options.include_usage
    std::size_t messages = 0;
    std::uint64_t prompt_tokens = 0;  // sum over messages (and Anthropic `system`) of words + 4
    std::string last_role;  // "user", "assistant", "tool", "system"; an Anthropic tool_result turn is "tool"
    std::string last_text;  // the last message's text (string content or text/content parts joined)
    std::string last_tool_call_id;  // OpenAI tool_call_id / Anthropic tool_use_id of the last message
    std::size_t tools = 0;
    std::string first_tool_name;

    void clear();
};

// Parses `body` (capacity is grown for simdjson's padding). Returns false with
// `error` set to a client-facing message when the body is not a usable request.
bool parse_chat_request(std::string& body, Api api, ChatRequest& out, std::string& error);

struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> inputs;  // token-id inputs become "t<ID>" words
    std::size_t dimensions = 0;       // 0 = server default
    bool base64 = false;

    void clear();
};

bool parse_embedding_request(std::string& body, EmbeddingRequest& out, std::string& error);

}  // namespace rath::fake_llm::detail
