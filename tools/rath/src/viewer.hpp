#pragma once
// The graphical exports of the rath command: SVG drawn by Graphviz from the library's
// DOT export, and the library's self-contained HTML lineage viewer.
#include <rath/session/graph.hpp>

#include <string>

namespace rath::cli {

// `dot` rendered as SVG by Graphviz's `dot -Tsvg`, run as a child process (searched on
// PATH) with the DOT text on its stdin. Throws CommandError when `dot` is not installed
// (the message names the program and the Debian package) or when it fails. Blocks.
[[nodiscard]] std::string render_svg(const std::string& dot);

// The graph as one HTML page (rath::lineage::export_html_string) titled `title`.
// Waits for pending sessions (loaded ones never are).
[[nodiscard]] std::string render_html(const lineage::SessionGraph& graph, const std::string& title);

}  // namespace rath::cli
