#include <rath/session/chunk.hpp>

#include "lib/session/row_storage.hpp"

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

namespace {

namespace json = boost::json;

constexpr auto object_bytes = detail::footprint::object;
constexpr auto key_bytes = detail::footprint::key;
constexpr auto string_bytes = detail::footprint::string;

ChunkRowPtr sealed_row(ChunkKind kind, json::object payload, detail::RowStorage& storage) {
    storage.seal();  // before the row is shared: later allocations use the heap
    return make_chunk_row(kind, std::move(payload));
}

ChunkRowPtr text_chunk(ChunkKind kind, std::string_view text) {
    detail::RowStorage storage(object_bytes(1) + key_bytes("content") + string_bytes(text));
    json::object p(1, storage.get());
    p.emplace("content", text);
    return sealed_row(kind, std::move(p), storage);
}

}  // namespace

ChunkRowPtr user_text_chunk(std::string text) { return text_chunk(ChunkKind::user, text); }

ChunkRowPtr system_text_chunk(std::string text) { return text_chunk(ChunkKind::system, text); }

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

ChunkRowPtr assistant_turn_chunk_from(std::span<const ToolCallFields> tool_calls, std::optional<std::string_view> content) {
    std::size_t bytes = object_bytes(2) + key_bytes("content") + key_bytes("tool_calls") + (content ? string_bytes(*content) : 0);
    if (!tool_calls.empty()) bytes += detail::footprint::array(tool_calls.size());
    for (const auto& tc : tool_calls)
        bytes += object_bytes(3) + key_bytes("id") + key_bytes("type") + key_bytes("function") + object_bytes(2) +
                 key_bytes("name") + key_bytes("arguments") + string_bytes(tc.id) + string_bytes(tc.type) +
                 string_bytes(tc.name) + string_bytes(tc.arguments);
    detail::RowStorage storage(bytes);
    const json::storage_ptr& sp = storage.get();
    json::object p(2, sp);
    if (content)
        p.emplace("content", *content);
    else
        p.emplace("content", nullptr);
    if (tool_calls.empty()) {
        p.emplace("tool_calls", nullptr);
    } else {
        json::array calls(sp);
        calls.reserve(tool_calls.size());
        for (const auto& tc : tool_calls) {
            json::object fn(2, sp);
            fn.emplace("name", tc.name);
            fn.emplace("arguments", tc.arguments);
            json::object call(3, sp);
            call.emplace("id", tc.id);
            call.emplace("type", tc.type);
            call.emplace("function", std::move(fn));
            calls.emplace_back(std::move(call));
        }
        p.emplace("tool_calls", std::move(calls));
    }
    return sealed_row(ChunkKind::assistant, std::move(p), storage);
}

ChunkRowPtr assistant_turn_chunk(const std::vector<AssistantToolCall>& tool_calls, std::optional<std::string> content) {
    std::vector<ToolCallFields> fields;
    fields.reserve(tool_calls.size());
    for (const auto& tc : tool_calls) fields.push_back({tc.id, tc.name, tc.arguments, tc.type});
    std::optional<std::string_view> text;
    if (content) text = *content;
    return assistant_turn_chunk_from(fields, text);
}

ChunkRowPtr tool_feedback_chunk(std::string tool_call_id, std::string name, std::string body) {
    detail::RowStorage storage(object_bytes(3) + key_bytes("tool_call_id") + key_bytes("name") + key_bytes("content") +
                               string_bytes(tool_call_id) + string_bytes(name) + string_bytes(body));
    json::object p(3, storage.get());
    p.emplace("tool_call_id", tool_call_id);
    p.emplace("name", name);
    p.emplace("content", body);
    return sealed_row(ChunkKind::tool_result, std::move(p), storage);
}

}  // namespace rath
