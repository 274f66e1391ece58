#pragma once
// Transcript -> provider-neutral LLM messages (session.md §1.4): one message per row,
// in order; tool results keep their tool_call_id (the tool name is not forwarded).
#include <rath/llm/message.hpp>
#include <rath/session/chunk_table.hpp>

#include <vector>

namespace rath {

// Throws SessionError naming the row when a SYSTEM/USER/TOOL_RESULT row lacks
// "content" (or "tool_call_id").
[[nodiscard]] llm::Message chunk_row_to_message(const ChunkRow& row, std::size_t index = 0);
[[nodiscard]] std::vector<llm::Message> chunk_table_to_messages(const ChunkTable& table);

}  // namespace rath
