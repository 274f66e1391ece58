#pragma once
// Typed transcript rows (session.md §1.1-§1.2). A row is immutable and shared by
// reference between sessions; its payload keeps the exact key order of the spec,
// which the persisted JSONL format depends on. The builders below put a payload's
// nodes and text in one block owned by the row (a copy of the payload still
// allocates from the ordinary heap).
//
// Thread safety: a row never changes once built; read it from any thread at once.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rath {

enum class ChunkKind { system, user, assistant, tool_result };

// The wire value: "system", "user", "assistant", "tool_result".
[[nodiscard]] std::string_view to_string(ChunkKind kind) noexcept;
// The kind for a wire value, or nullopt.
[[nodiscard]] std::optional<ChunkKind> chunk_kind_from_string(std::string_view s) noexcept;

class ChunkRow {
public:
    ChunkRow(ChunkKind kind, boost::json::object payload) : kind_(kind), payload_(std::move(payload)) {}

    [[nodiscard]] ChunkKind kind() const noexcept { return kind_; }
    [[nodiscard]] const boost::json::object& payload() const noexcept { return payload_; }

    // Value equality: kind plus deep payload equality.
    bool operator==(const ChunkRow& o) const { return kind_ == o.kind_ && payload_ == o.payload_; }

private:
    ChunkKind kind_;
    boost::json::object payload_;
};

using ChunkRowPtr = std::shared_ptr<const ChunkRow>;

// One tool call of an assistant turn, stored in OpenAI wire form.
struct AssistantToolCall {
    std::string id{};
    std::string name{};
    std::string arguments{};  // the raw JSON text the model emitted
    std::string type = "function";
};

// {"content": text}
[[nodiscard]] ChunkRowPtr user_text_chunk(std::string text);
// {"content": text}
[[nodiscard]] ChunkRowPtr system_text_chunk(std::string text);
// {"content": content-or-null, "tool_calls": list-or-null}; an empty list is stored as null.
[[nodiscard]] ChunkRowPtr assistant_turn_chunk(const std::vector<AssistantToolCall>& tool_calls,
                                               std::optional<std::string> content = std::nullopt);
// Same, from borrowed fields: nothing is copied before it lands in the row.
struct ToolCallFields {
    std::string_view id{};
    std::string_view name{};
    std::string_view arguments{};
    std::string_view type = "function";
};
[[nodiscard]] ChunkRowPtr assistant_turn_chunk_from(std::span<const ToolCallFields> tool_calls,
                                                    std::optional<std::string_view> content = std::nullopt);
// Same, from calls already in wire form ({"id","type","function":{"name","arguments"}}).
[[nodiscard]] ChunkRowPtr assistant_turn_chunk_wire(boost::json::array tool_calls,
                                                    std::optional<std::string> content = std::nullopt);
// {"tool_call_id": id, "name": name, "content": body}
[[nodiscard]] ChunkRowPtr tool_feedback_chunk(std::string tool_call_id, std::string name, std::string body);

// Any kind with a payload given verbatim (loader, migrations).
[[nodiscard]] inline ChunkRowPtr make_chunk_row(ChunkKind kind, boost::json::object payload) {
    return std::make_shared<const ChunkRow>(kind, std::move(payload));
}

}  // namespace rath
