#pragma once
// The lineage graph (session.md §4.3-§4.4): edges are implied by each session's
// ordered parent ids; a graph is any ordered collection of sessions (usually
// session_registry().sessions()). Traversal orders are exactly the spec's; export is
// the spec's JSONL plus Graphviz DOT and a self-contained HTML viewer.
//
// Thread safety: free functions over handles; call them from any thread. The JSONL
// exports read each session's transcript and so wait for pending sessions (throwing
// async::DeadlockError on a runtime io thread), as does the HTML export; the
// traversals and DOT never wait.
#include <rath/session.hpp>
#include <rath/session/lineage_recorder.hpp>

#include <boost/json/object.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::lineage {

// A graph: sessions in insertion order (the first occurrence of an id wins).
using SessionGraph = std::vector<Session>;

// Ancestors nearest-first (breadth-first over ordered parents), start excluded.
// Throws LineageConsistencyError for an unknown start or a missing parent.
[[nodiscard]] std::vector<std::string> ancestors_bfs(const SessionGraph& graph, std::string_view start);
// Descendants in the spec's pre-order (root's children last-first, deeper levels
// first-first), de-duplicated. Validate first: there is no cycle guard.
[[nodiscard]] std::vector<std::string> descendants_dfs_preorder(const SessionGraph& graph, std::string_view root);
// Throws LineageConsistencyError for a missing parent ("<sid> references missing parent
// <p>") or a cycle ("cycle involving session <id>"). Iterative.
void validate_acyclic(const SessionGraph& graph);
// (parent, child) for every child in graph order and every parent in its order.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> edge_pairs(const SessionGraph& graph);

// A frozen copy of the lineage fields of one session.
struct LineageView {
    std::string session_id{};
    std::vector<std::string> parent_session_ids{};
    std::string lineage_operator{};
    std::string lineage_kind{};  // the wire value
    LineageExtras lineage_extras{};
};
[[nodiscard]] LineageView lineage_view(const Session& s);

// {"id", "parent_session_ids", "lineage_operator", "lineage_kind", "lineage_extras",
//  "chunk_count", "cumulative_usage"} — chunk_count waits for a pending session.
[[nodiscard]] boost::json::object session_to_jsonl_row(const Session& s);
// One Python-json line per session, each ending in "\n"; "" for no sessions.
[[nodiscard]] std::string export_jsonl_string(const SessionGraph& sessions);
// Creates parent directories. Throws PersistenceError when the file cannot be written.
void export_jsonl(const SessionGraph& sessions, const std::filesystem::path& path);
// The journal's ids resolved through session_registry(), in order. Unknown ids are
// skipped, or with skip_unknown=false throw LineageConsistencyError("session <id> not
// in registry").
void export_journal_jsonl(const Journal& journal, const std::filesystem::path& path, bool skip_unknown = true);

struct DotOptions {
    std::string graph_name = "lineage";
    bool show_chunk_counts = true;  // only for sessions already materialized (never waits)
};
// A Graphviz digraph: one node per session (operator, kind, short id), one edge per
// parent link; parents outside the graph are drawn dashed.
[[nodiscard]] std::string export_dot_string(const SessionGraph& sessions, const DotOptions& options = {});
void export_dot(const SessionGraph& sessions, const std::filesystem::path& path, const DotOptions& options = {});

struct HtmlOptions {
    std::string title = "rath lineage";  // the page title
};
// One self-contained HTML page (no network fetches; opens from file://): the lineage
// DAG laid out by generation, each session's transcript, usage and lineage extras on
// click, search by id or text. The data sits in the page as JSON, every '<' in it
// escaped so that no transcript text can close the script block: {"schema_version": 1,
// "title", "generator", "rows": [{"kind", "payload"}, ...] (each row once, however many
// sessions share it), "sessions": [session_to_jsonl_row + "rows": [row index, ...]]}.
// Waits for pending sessions.
[[nodiscard]] std::string export_html_string(const SessionGraph& sessions, const HtmlOptions& options = {});
// Creates parent directories. Throws PersistenceError when the file cannot be written.
void export_html(const SessionGraph& sessions, const std::filesystem::path& path, const HtmlOptions& options = {});

}  // namespace rath::lineage
