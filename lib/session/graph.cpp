#include <rath/session/graph.hpp>
#include <rath/session/registry.hpp>

#include "lib/session/session_state.hpp"
#include "lib/text/pyjson.hpp"

#include <boost/json/array.hpp>

#include <cstdio>
#include <deque>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

namespace rath::lineage {

namespace {

// id -> parents, in graph order (first occurrence of an id wins).
struct Index {
    std::vector<std::string> order;
    std::unordered_map<std::string, std::vector<std::string>> parents;

    explicit Index(const SessionGraph& g) {
        for (const auto& s : g) {
            if (parents.count(s.id())) continue;
            order.push_back(s.id());
            parents.emplace(s.id(), s.parent_session_ids());
        }
    }
    bool has(const std::string& id) const { return parents.count(id) != 0; }
};

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw PersistenceError("cannot open " + path.string() + " for writing", path.string());
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.flush();
    if (!f) throw PersistenceError("failed to write " + path.string(), path.string());
}

std::string dot_quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}

const char* kind_color(LineageKind k) {
    switch (k) {
        case LineageKind::leaf_user: return "#dbeafe";
        case LineageKind::leaf_system: return "#ede9fe";
        case LineageKind::op_fork: return "#dcfce7";
        case LineageKind::op_detach: return "#fef9c3";
        case LineageKind::op_merge: return "#fde68a";
        case LineageKind::op_session_loop: return "#fee2e2";
        case LineageKind::op_session_compress: return "#e0f2fe";
        default: return "#f3f4f6";
    }
}

}  // namespace

std::vector<std::string> ancestors_bfs(const SessionGraph& graph, std::string_view start_sv) {
    Index ix(graph);
    std::string start(start_sv);
    if (!ix.has(start)) throw LineageConsistencyError("unknown session id in graph: " + start);
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    std::deque<std::string> queue(ix.parents[start].begin(), ix.parents[start].end());
    while (!queue.empty()) {
        std::string pid = std::move(queue.front());
        queue.pop_front();
        if (seen.count(pid)) continue;
        if (!ix.has(pid))
            throw LineageConsistencyError("parent " + pid + " not in registry for descendant chain from " + start);
        seen.insert(pid);
        out.push_back(pid);
        for (const auto& p : ix.parents[pid]) queue.push_back(p);
    }
    return out;
}

std::vector<std::string> descendants_dfs_preorder(const SessionGraph& graph, std::string_view root_sv) {
    Index ix(graph);
    std::string root(root_sv);
    if (!ix.has(root)) throw LineageConsistencyError("unknown root session id: " + root);
    std::unordered_map<std::string, std::vector<std::string>> children;
    for (const auto& sid : ix.order)
        for (const auto& p : ix.parents[sid]) children[p].push_back(sid);
    std::vector<std::string> out;
    std::vector<std::string> stack = children[root];
    while (!stack.empty()) {
        std::string cur = std::move(stack.back());
        stack.pop_back();
        out.push_back(cur);
        auto it = children.find(cur);
        if (it != children.end()) stack.insert(stack.end(), it->second.rbegin(), it->second.rend());
    }
    std::vector<std::string> unique;
    std::unordered_set<std::string> seen;
    for (auto& id : out)
        if (seen.insert(id).second) unique.push_back(std::move(id));
    return unique;
}

void validate_acyclic(const SessionGraph& graph) {
    Index ix(graph);
    for (const auto& sid : ix.order)
        for (const auto& p : ix.parents[sid])
            if (!ix.has(p)) throw LineageConsistencyError(sid + " references missing parent " + p);
    enum Mark { white, gray, black };
    std::unordered_map<std::string, Mark> marks;
    struct Frame {
        const std::string* id;
        std::size_t next;
    };
    for (const auto& node : ix.order) {
        if (marks[node] != white) continue;
        // Iterative DFS along parent edges (no recursion limit on deep chains).
        std::vector<Frame> stack{{&node, 0}};
        marks[node] = gray;
        while (!stack.empty()) {
            Frame& f = stack.back();
            const auto& ps = ix.parents[*f.id];
            if (f.next == ps.size()) {
                marks[*f.id] = black;
                stack.pop_back();
                continue;
            }
            const std::string& p = ps[f.next++];
            Mark m = marks[p];
            if (m == gray) throw LineageConsistencyError("cycle involving session " + p);
            if (m == white) {
                marks[p] = gray;
                stack.push_back({&ix.parents.find(p)->first, 0});
            }
        }
    }
}

std::vector<std::pair<std::string, std::string>> edge_pairs(const SessionGraph& graph) {
    Index ix(graph);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& sid : ix.order)
        for (const auto& p : ix.parents[sid]) out.emplace_back(p, sid);
    return out;
}

LineageView lineage_view(const Session& s) {
    Lineage l = s.lineage();
    return LineageView{s.id(), std::move(l.parent_session_ids), std::move(l.op), std::string(to_string(l.kind)),
                       std::move(l.extras)};
}

boost::json::object session_to_jsonl_row(const Session& s) {
    Lineage l = s.lineage();
    boost::json::object row;
    row["id"] = s.id();
    boost::json::array parents;
    for (auto& p : l.parent_session_ids) parents.emplace_back(p);
    row["parent_session_ids"] = std::move(parents);
    row["lineage_operator"] = l.op;
    row["lineage_kind"] = to_string(l.kind);
    boost::json::array extras;
    for (auto& [k, v] : l.extras) extras.emplace_back(boost::json::array{boost::json::value(k), v});
    row["lineage_extras"] = std::move(extras);
    row["chunk_count"] = s.chunks().size();  // waits for a pending session
    row["cumulative_usage"] = token_usage_to_json(detail::SessionAccess::raw_usage(s));
    return row;
}

std::string export_jsonl_string(const SessionGraph& sessions) {
    std::string out;
    for (const auto& s : sessions) {
        detail::pyjson_append(out, session_to_jsonl_row(s));
        out += '\n';
    }
    return out;
}

void export_jsonl(const SessionGraph& sessions, const std::filesystem::path& path) {
    write_file(path, export_jsonl_string(sessions));
}

void export_journal_jsonl(const Journal& journal, const std::filesystem::path& path, bool skip_unknown) {
    SessionGraph sessions;
    for (const auto& id : journal.visit_order()) {
        auto s = journal.find(id);
        if (!s) s = session_registry().get(id);
        if (!s) {
            if (skip_unknown) continue;
            throw LineageConsistencyError("session " + id + " not in registry");
        }
        sessions.push_back(*s);
    }
    export_jsonl(sessions, path);
}

std::string export_dot_string(const SessionGraph& sessions, const DotOptions& options) {
    Index ix(sessions);
    std::string out = "digraph " + dot_quote(options.graph_name) + " {\n";
    out += "  rankdir=TB;\n";
    out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
    out += "  edge [color=\"#555555\"];\n";
    std::unordered_set<std::string> emitted;
    for (const auto& s : sessions) {
        if (!emitted.insert(s.id()).second) continue;
        Lineage l = s.lineage();
        std::string label = l.op + "\n" + std::string(to_string(l.kind)) + "\n" + s.id().substr(0, 8);
        if (options.show_chunk_counts && !s.pending()) label += "\n" + std::to_string(detail::SessionAccess::raw_chunks(s).size()) + " chunks";
        if (s.pending()) label += "\n(pending)";
        out += "  " + dot_quote(s.id()) + " [label=" + dot_quote(label) + ", fillcolor=\"" + kind_color(l.kind) +
               "\"];\n";
    }
    // Parents outside the graph still get a node, drawn dashed.
    for (const auto& sid : ix.order)
        for (const auto& p : ix.parents[sid])
            if (!ix.has(p) && emitted.insert(p).second)
                out += "  " + dot_quote(p) + " [label=" + dot_quote("(outside graph)\n" + p.substr(0, 8)) +
                       ", style=\"rounded,dashed\"];\n";
    for (const auto& [parent, child] : edge_pairs(sessions))
        out += "  " + dot_quote(parent) + " -> " + dot_quote(child) + ";\n";
    out += "}\n";
    return out;
}

void export_dot(const SessionGraph& sessions, const std::filesystem::path& path, const DotOptions& options) {
    write_file(path, export_dot_string(sessions, options));
}

void export_html(const SessionGraph& sessions, const std::filesystem::path& path, const HtmlOptions& options) {
    write_file(path, export_html_string(sessions, options));
}

}  // namespace rath::lineage
