// rath: the command line over what rath programs leave behind. See the --help text
// below for the subcommands, the global flags and the exit codes.
#include "cli.hpp"

#include <rath/error.hpp>
#include <rath/log.hpp>

#include <exception>
#include <iostream>

namespace {

constexpr const char* footer =
    "Exit codes: 0 success; 1 the command failed (no such session, a malformed file,\n"
    "an unreachable provider, ...); 2 bad usage (unknown flag, missing argument).\n"
    "Colours only when stdout is a terminal and NO_COLOR is unset (see --color).\n"
    "Sessions live in <config dir>/sessions, the config dir being $OPENRATH_HOME,\n"
    "else ./.openrath, else ~/.openrath.";

}  // namespace

int main(int argc, char** argv) {
    if (auto rc = rath::cli::run_server_program(argc, argv)) return *rc;
    rath::cli::Context ctx;
    CLI::App app{"rath: inspect persisted sessions, their lineage graph and the configuration; run the project's servers", "rath"};
    app.footer(footer);
    app.require_subcommand(1);
    app.fallthrough();
    app.set_help_all_flag("--help-all", "Print help for every subcommand");
    app.add_option("--dir", ctx.dir, "Sessions directory (default: <config dir>/sessions)");
    app.add_option("--config", ctx.config, "Config file (default: <config dir>/config.json)");
    app.add_flag("--json", ctx.json, "Machine-readable JSON output where the command has one");
    app.add_option("--color", ctx.color, "auto (a terminal, NO_COLOR unset), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();

    rath::cli::add_sessions_command(app, ctx);
    rath::cli::add_graph_command(app, ctx);
    rath::cli::add_config_command(app, ctx);
    rath::cli::add_replay_command(app, ctx);
    rath::cli::add_resume_command(*app.get_subcommand("sessions"), ctx);
    rath::cli::add_serve_commands(app);
    rath::cli::add_mcp_login_command(*app.get_subcommand("mcp"), ctx);

    // The library's own warnings (a skipped file, ...) are reported by the commands.
    rath::set_log_level(rath::LogLevel::error);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::RuntimeError& e) {
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        // Usage errors print CLI11's message and a hint; the exit code is ours. A word
        // that is no subcommand is named (CLI11 would only say one is required).
        for (const CLI::App* sub = &app; dynamic_cast<const CLI::RequiredError*>(&e);) {
            if (auto left = sub->remaining(); !left.empty()) {
                std::cerr << "rath: unknown command '" << left.front() << "'\n";
                break;
            }
            auto parsed = sub->get_subcommands();
            if (parsed.empty()) break;
            sub = parsed.front();
        }
        (void)app.exit(e);
        return rath::cli::exit_usage;
    } catch (const rath::cli::CommandError& e) {
        std::cerr << "rath: " << e.what() << '\n';
        return rath::cli::exit_failure;
    } catch (const std::exception& e) {
        std::cerr << "rath: " << e.what() << '\n';
        return rath::cli::exit_failure;
    }
    return rath::cli::exit_ok;
}
