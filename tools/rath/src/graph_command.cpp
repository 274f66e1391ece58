// rath graph export: the lineage graph of the persisted sessions, exported by the
// library's lineage code (rath/session/graph.hpp) from the loaded sessions.
#include "cli.hpp"
#include "output.hpp"
#include "store.hpp"
#include "viewer.hpp"

#include <rath/session/graph.hpp>

#include <memory>
#include <unordered_set>

namespace rath::cli {

namespace fs = std::filesystem;

namespace {

void run_graph_export(const Context& ctx, const std::optional<std::string>& root, const std::string& format,
                      const std::optional<fs::path>& out) {
    const fs::path dir = ctx.sessions_dir();
    lineage::SessionGraph graph;
    const auto metas = list_sessions(dir);
    Progress progress("loading sessions", metas.size(), ctx.json);
    for (const auto& m : metas) {
        graph.push_back(persistence::load_session_file(m.path).to_session());
        progress.tick();
    }
    progress.finish();

    // The traversals have no cycle guard, so the graph is validated first. Parents that
    // were never persisted (the user message a run started from) stand in as empty
    // nodes for the check only; the export draws them as outside the graph.
    {
        lineage::SessionGraph checked = graph;
        std::unordered_set<std::string> ids;
        for (const auto& s : graph) ids.insert(s.id());
        for (const auto& s : graph)
            for (const auto& p : s.parent_session_ids())
                if (ids.insert(p).second) checked.emplace_back(ChunkTable{}, SessionOptions{.id = p});
        lineage::validate_acyclic(checked);
    }

    if (root) {
        const std::string id = load_session(dir, *root).header.id;
        lineage::SessionGraph sub;
        std::unordered_set<std::string> keep{id};
        for (auto& d : lineage::descendants_dfs_preorder(graph, id)) keep.insert(std::move(d));
        for (const auto& s : graph)
            if (keep.contains(s.id())) sub.push_back(s);
        graph = std::move(sub);
    }
    if (format == "dot")
        emit(lineage::export_dot_string(graph), out);
    else if (format == "svg")
        emit(render_svg(lineage::export_dot_string(graph)), out);
    else if (format == "html")
        emit(render_html(graph, root ? "rath lineage from " + *root : "rath lineage of " + dir.string()), out);
    else
        emit(lineage::export_jsonl_string(graph), out);
}

}  // namespace

void add_graph_command(CLI::App& app, Context& ctx) {
    auto* graph = app.add_subcommand("graph", "The lineage graph of the persisted sessions");
    graph->require_subcommand(1);
    auto root = std::make_shared<std::optional<std::string>>();
    auto format = std::make_shared<std::string>("jsonl");
    auto out = std::make_shared<std::optional<fs::path>>();
    auto* exp = graph->add_subcommand(
        "export", "Export the graph: one JSONL row per session (id, parents, operator, kind, extras, chunk count, "
                  "usage), a Graphviz digraph, SVG drawn by Graphviz's dot, or one self-contained HTML lineage viewer");
    exp->add_option("--root", *root, "Only this session (id or unique prefix) and its descendants");
    exp->add_option("--format,-f", *format, "jsonl, dot, svg (needs Graphviz's dot on PATH) or html")
        ->check(CLI::IsMember({"jsonl", "dot", "svg", "html"}))
        ->capture_default_str();
    exp->add_option("--output,-o", *out, "Write to this file instead of stdout");
    exp->callback([&ctx, root, format, out] { run_graph_export(ctx, *root, *format, *out); });
}

}  // namespace rath::cli
