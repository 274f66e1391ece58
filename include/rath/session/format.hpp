#pragma once
// One-line renderings of transcript rows (session.md §1.9): the repr row lines and
// the logging brief.
#include <rath/session/chunk.hpp>

#include <cstddef>
#include <string>

namespace rath {

// "[i] user: 'hello'" / "[i] assistant: text='..', tools=[name('{}')]" /
// "[i] tool_result: name='t', id='c1', body='...'" (text 256, tool args 160 chars).
[[nodiscard]] std::string format_chunk_row_repr(std::size_t index, const ChunkRow& row);
// The logging helper: names only for tools, JSON tool bodies re-serialized compactly.
[[nodiscard]] std::string format_chunk_row_brief(std::size_t index, const ChunkRow& row, std::size_t max_payload = 400);

}  // namespace rath
