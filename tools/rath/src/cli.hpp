#pragma once
// What every subcommand of the rath command shares: the global flags, where output goes,
// and the exit-code contract (main.cpp documents it in --help).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace rath::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // the command ran and failed (missing session, unreachable provider)
inline constexpr int exit_usage = 2;    // bad flags or arguments

// A failure the command reports as "rath: <message>" and exit code 1.
class CommandError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Context {
    std::optional<std::filesystem::path> dir{};     // --dir: the sessions directory
    std::optional<std::filesystem::path> config{};  // --config: the config file
    bool json = false;                              // --json
    std::string color = "auto";                     // --color auto|always|never

    // --dir, else the directory of --config's sessions, else the library's default
    // (<OPENRATH_HOME | ./.openrath | ~/.openrath>/sessions).
    [[nodiscard]] std::filesystem::path sessions_dir() const;
    // --config, else the library's default config path.
    [[nodiscard]] std::filesystem::path config_path() const;
    // Colours only on a terminal (and never with NO_COLOR set), unless --color says so.
    [[nodiscard]] bool use_color() const;
};

// Each adds its subcommand to `app`; the callbacks run the command and throw on failure.
void add_sessions_command(CLI::App& app, Context& ctx);
void add_graph_command(CLI::App& app, Context& ctx);
void add_config_command(CLI::App& app, Context& ctx);
// config init | set | env, under the `config` subcommand.
void add_config_edit_commands(CLI::App& config, Context& ctx);
// fake-llm, mcp serve, sandbox serve: listed in --help, run with their own flag parsers.
void add_serve_commands(CLI::App& app);
// When argv names one of those programs first, runs it and returns its exit code.
std::optional<int> run_server_program(int argc, char** argv);
void add_replay_command(CLI::App& app, Context& ctx);
// `login` under the `mcp` subcommand (which add_serve_commands creates).
void add_mcp_login_command(CLI::App& mcp, Context& ctx);
// `resume` under the `sessions` subcommand.
void add_resume_command(CLI::App& sessions, Context& ctx);

}  // namespace rath::cli
