// rath fake-llm | mcp serve | sandbox serve: the three server programs of the project run
// from the one binary. Each keeps its own flag parser (and --help), so the arguments
// after the command words reach it untouched.
#include "cli.hpp"

#include <rath/fake_llm/program.hpp>

#include <rath/mcp_serve/program.hpp>
#include <rath/sandbox_server/program.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rath::cli {

namespace {

using ProgramMain = int (*)(int, char**);

struct ServerProgram {
    std::vector<std::string_view> words;  // the command words after "rath"
    const char* name;                     // argv[0] handed to the program
    ProgramMain main;
    const char* description;
    const char* group_description = "";  // of the first word when there are two
};

const std::vector<ServerProgram>& server_programs() {
    static const std::vector<ServerProgram> programs{
        {{"fake-llm"}, "rath fake-llm", &fake_llm::program_main,
         "The fake LLM server (OpenAI and Anthropic wire formats); same flags as rath-fake-llm"},
        {{"mcp", "serve"}, "rath mcp serve", &mcp_serve::program_main,
         "rath's tools and config-defined agents as an MCP server; same flags as rath-mcp-serve",
         "MCP: serve rath's tools and agents, sign in to servers"},
        {{"sandbox", "serve"}, "rath sandbox serve", &sandbox_server::program_main,
         "The OpenSandbox API on bubblewrap; same flags as rath-sandbox-server",
         "Sandboxes: serve the OpenSandbox API"},
    };
    return programs;
}

int run_program(const ServerProgram& p, std::vector<std::string> args) {
    args.insert(args.begin(), p.name);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return p.main(static_cast<int>(args.size()), argv.data());
}

const ServerProgram* server_program_at(int argc, char** argv, int at) {
    for (const auto& p : server_programs()) {
        if (argc - at < static_cast<int>(p.words.size())) continue;
        bool match = true;
        for (std::size_t i = 0; i < p.words.size() && match; ++i) match = p.words[i] == argv[at + static_cast<int>(i)];
        if (match) return &p;
    }
    return nullptr;
}

}  // namespace

std::optional<int> run_server_program(int argc, char** argv) {
    if (const auto* p = server_program_at(argc, argv, 1))
        return run_program(*p, std::vector<std::string>(argv + 1 + p->words.size(), argv + argc));
    // rath's global flags mean nothing to these programs; say so rather than let CLI11
    // report the program's own flags as unexpected.
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a.empty() || a.front() != '-') {
            if (const auto* p = server_program_at(argc, argv, i)) {
                std::fprintf(stderr, "rath: '%s' takes none of rath's global flags; write it first: %s [options]\n",
                             p->name, p->name);
                return exit_usage;
            }
            break;
        }
        if (a == "--dir" || a == "--config" || a == "--color") ++i;  // their value
    }
    return std::nullopt;
}

void add_serve_commands(CLI::App& app) {
    // Listed in --help only: main() hands these words to run_server_program before
    // CLI11 parses, so they need no options or callbacks here.
    for (const auto& p : server_programs()) {
        CLI::App* parent = &app;
        for (std::size_t i = 0; i + 1 < p.words.size(); ++i) {
            CLI::App* existing = nullptr;
            for (auto* sub : parent->get_subcommands({}))
                if (sub->get_name() == p.words[i]) existing = sub;
            if (!existing) {
                existing = parent->add_subcommand(std::string(p.words[i]), p.group_description);
                existing->require_subcommand(1);
            }
            parent = existing;
        }
        parent->add_subcommand(std::string(p.words.back()), p.description);
    }
}

}  // namespace rath::cli
