#include <rath/session/chunk.hpp>

namespace rath {

std::string_view to_string(ChunkKind kind) noexcept {
    switch (kind) {
        case ChunkKind::system: return "system";
        case ChunkKind::user: return "user";
        case ChunkKind::assistant: return "assistant";
        case ChunkKind::tool_result: return "tool_result";
    }
    return "user";
}

std::optional<ChunkKind> chunk_kind_from_string(std::string_view s) noexcept {
    if (s == "system") return ChunkKind::system;
    if (s == "user") return ChunkKind::user;
    if (s == "assistant") return ChunkKind::assistant;
    if (s == "tool_result") return ChunkKind::tool_result;
    return std::nullopt;
}

ChunkRowPtr user_text_chunk(std::string text) {
    boost::json::object p(1);
    p["content"] = std::move(text);
    return make_chunk_row(ChunkKind::user, std::move(p));
}

ChunkRowPtr system_text_chunk(std::string text) {
    boost::json::object p(1);
    p["content"] = std::move(text);
    return make_chunk_row(ChunkKind::system, std::move(p));
}

ChunkRowPtr assistant_turn_chunk_wire(boost::json::array tool_calls, std::optional<std::string> content) {
    boost::json::object p(2);  // sized up front: each growth of an object rehashes
    if (content)
        p["content"] = std::move(*content);
    else
        p["content"] = nullptr;
    if (tool_calls.empty())
        p["tool_calls"] = nullptr;
    else
        p["tool_calls"] = std::move(tool_calls);
    return make_chunk_row(ChunkKind::assistant, std::move(p));
}

ChunkRowPtr assistant_turn_chunk(const std::vector<AssistantToolCall>& tool_calls, std::optional<std::string> content) {
    boost::json::array calls;
    calls.reserve(tool_calls.size());
    for (const auto& tc : tool_calls) {
        boost::json::object fn(2);
        fn["name"] = tc.name;
        fn["arguments"] = tc.arguments;
        boost::json::object call(3);
        call["id"] = tc.id;
        call["type"] = tc.type;
        call["function"] = std::move(fn);
        calls.emplace_back(std::move(call));
    }
    return assistant_turn_chunk_wire(std::move(calls), std::move(content));
}

ChunkRowPtr tool_feedback_chunk(std::string tool_call_id, std::string name, std::string body) {
    boost::json::object p(3);
    p["tool_call_id"] = std::move(tool_call_id);
    p["name"] = std::move(name);
    p["content"] = std::move(body);
    return make_chunk_row(ChunkKind::tool_result, std::move(p));
}

}  // namespace rath
