// SVG through Graphviz and the HTML lineage viewer for `rath graph export` and
// `rath sessions export`.
#include "viewer.hpp"
#include "cli.hpp"

#include "lib/backend/process.hpp"

#include <rath/async/block_on.hpp>

#include <cstdlib>
#include <string_view>
#include <system_error>
#include <unistd.h>

extern char** environ;

namespace rath::cli {

namespace {

constexpr std::string_view graphviz_program = "dot";

// The first executable `name` on $PATH, or "" (what posix_spawnp would run).
std::string find_on_path(std::string_view name) {
    const char* path = std::getenv("PATH");
    std::string_view rest = path ? path : "";
    while (true) {
        const auto colon = rest.find(':');
        std::string dir(rest.substr(0, colon));
        if (dir.empty()) dir = ".";
        std::string candidate = dir + "/" + std::string(name);
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (colon == std::string_view::npos) return {};
        rest.remove_prefix(colon + 1);
    }
}

std::string not_installed() {
    return "cannot render SVG: Graphviz's 'dot' program is not on PATH (install the Debian package graphviz, "
           "or export --format dot and render it elsewhere)";
}

}  // namespace

std::string render_svg(const std::string& dot) {
    const std::string program = find_on_path(graphviz_program);
    if (program.empty()) throw CommandError(not_installed());
    backend::detail::SpawnRequest req;
    req.argv = {program, "-Tsvg"};
    for (char** e = environ; e && *e; ++e) req.env.emplace_back(*e);
    req.stdin_data = dot;
    // A large graph makes a large drawing; the cap only guards against a runaway child.
    req.max_output_bytes = std::size_t{1} << 30;
    backend::detail::SpawnOutcome outcome;
    try {
        outcome = async::block_on(backend::detail::async_run_process(std::move(req)));
    } catch (const std::system_error& e) {
        if (e.code() == std::errc::no_such_file_or_directory) throw CommandError(not_installed());
        throw CommandError("cannot run " + program + ": " + e.what());
    }
    if (outcome.exit_code != 0) {
        std::string why = outcome.err.empty() ? "no message" : outcome.err;
        while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
        throw CommandError(program + " -Tsvg failed (exit " + std::to_string(outcome.exit_code) + "): " + why);
    }
    if (outcome.out_truncated) throw CommandError(program + " -Tsvg produced more than 1 GiB of SVG");
    return std::move(outcome.out);
}

std::string render_html(const lineage::SessionGraph& graph, const std::string& title) {
    return lineage::export_html_string(graph, {.title = title});
}

}  // namespace rath::cli
