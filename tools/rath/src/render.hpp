#pragma once
// Renderings of one persisted session: readable text for a terminal, Markdown, the
// JSONL records (the library's own builders) and a JSON document for scripts.
#include "output.hpp"

#include <rath/session/persistence/loader.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <string>

namespace rath::cli {

// The header block: id, state, created, lineage, file, rows, usage.
[[nodiscard]] std::string render_header_text(const persistence::PersistedSession& s, const Style& style);
// Rows [first, end) of the transcript: role, text, tool calls with their arguments,
// tool results with the call they answer.
[[nodiscard]] std::string render_rows_text(const ChunkTable& rows, std::size_t first, const Style& style);
// "prompt P, completion C, total T" or "none reported".
[[nodiscard]] std::string usage_text(const std::optional<TokenUsage>& usage);

[[nodiscard]] std::string render_markdown(const persistence::PersistedSession& s);
// Header, chunk and (for a closed session) trailer records, one line each, as the
// library writes them (current schema).
[[nodiscard]] std::string render_jsonl(const persistence::PersistedSession& s);
// {"id", "path", "closed", "created_at", "parent_session_ids", "lineage_operator",
//  "lineage_kind", "lineage_extras", "usage", "chunks": [{"index", "kind", "payload"}]}
[[nodiscard]] boost::json::object session_to_json(const persistence::PersistedSession& s);

}  // namespace rath::cli
