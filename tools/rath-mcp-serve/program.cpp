// rath-mcp-serve: serves rath's built-in tools and agents defined in config.json to MCP
// clients, over stdio or Streamable HTTP. See usage() for the flags and the config shape.
#include <rath/mcp_serve/program.hpp>

#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/llm/provider.hpp>
#include <rath/log.hpp>
#include <rath/mcp/server.hpp>
#include <rath/mcp/server_http.hpp>
#include <rath/mcp/server_stdio.hpp>
#include <rath/tool/system_tools.hpp>

#include <boost/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace json = boost::json;

namespace {

void usage(std::FILE* to, const char* program) {
    std::fprintf(to, "usage: %s [options]\n", program);
    std::fputs(
        "Serves rath tools and agents as an MCP server (protocol 2025-11-25 and 2025-06-18).\n"
        "\n"
        "What to serve (at least one):\n"
        "  --builtin-tools        the six built-in tools (run_shell_command, read_workspace_file,\n"
        "                         write_workspace_file, list_workspace_files, workspace_path_exists,\n"
        "                         run_code) on a local sandbox per MCP session\n"
        "  --agent NAME           the agent NAME of the config file's \"agents\" section, as a tool\n"
        "                         of that name taking {\"message\": string}; it answers the agent's\n"
        "                         final text and the run's transcript (resource rath://sessions/<id>,\n"
        "                         also listed by resources/list). Repeatable.\n"
        "  --all-agents           every agent of the \"agents\" section\n"
        "\n"
        "Transport:\n"
        "  --stdio                one session on stdin/stdout, one JSON-RPC message per line (default)\n"
        "  --http                 Streamable HTTP; prints \"listening on http://HOST:PORT/PATH\" and\n"
        "                         serves until SIGINT/SIGTERM\n"
        "  --host HOST            address to listen on (default 127.0.0.1; anything else exposes an\n"
        "                         unauthenticated server)\n"
        "  --port N               port (default 0: any free one)\n"
        "  --path PATH            endpoint path (default /mcp)\n"
        "  --allow-origin ORIGIN  also accept this Origin (default: only localhost origins). Repeatable.\n"
        "  --allow-host NAME      also accept this Host name on a loopback bind. Repeatable.\n"
        "  --json-response        answer POSTs with one JSON body instead of an SSE stream\n"
        "\n"
        "Other:\n"
        "  --config PATH          config file (default: $OPENRATH_HOME, ./.openrath or ~/.openrath)/config.json\n"
        "  --name NAME            server name reported to clients (default rath-mcp-serve)\n"
        "  --workdir DIR          working directory of the sessions' local sandbox\n"
        "  --page-size N          items per tools/list or resources/list page (default 100)\n"
        "  --log-level LEVEL      debug|info|warning|error|off for rath's own log on stderr (default warning)\n"
        "  --help                 this text\n"
        "\n"
        "The \"agents\" section of config.json (kept by rath's config store like any unknown key):\n"
        "  \"agents\": { \"<name>\": { \"system_prompt\": string (required),\n"
        "                            \"provider\": string (an llm.providers entry; default llm.default_provider),\n"
        "                            \"model\": string, \"description\": string,\n"
        "                            \"max_tool_rounds\": int (default 64),\n"
        "                            \"mcp\": [string] (MCP servers of the config whose tools it gets),\n"
        "                            \"tools\": [string] (C++ tools linked into the program: this one\n"
        "                                     links none, so an agent naming one is refused),\n"
        "                            \"backend\", \"idempotent_tools\": read by rath-worker only } }\n"
        "Agents have the built-in tools and those of their MCP servers (rath/flow/config_agents.hpp).\n"
        "Nothing but MCP messages is written to stdout in --stdio mode;\n"
        "logs go to stderr.\n",
        to);
}

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "rath-mcp-serve: %s\n", message.c_str());
    std::exit(2);
}

}  // namespace

namespace rath::mcp_serve {

int program_main(int argc, char** argv) {
    bool http = false, builtin = false, all_agents = false;
    std::vector<std::string> agent_names;
    std::optional<std::string> config_path;
    rath::mcp::ServerOptions sopt{.name = "rath-mcp-serve"};
    rath::mcp::StreamableHttpServerOptions hopt;
    rath::set_log_level(rath::LogLevel::warning);

    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            usage(stdout, argv[0]);
            return 0;
        } else if (a == "--stdio") {
            http = false;
        } else if (a == "--http") {
            http = true;
        } else if (a == "--builtin-tools") {
            builtin = true;
        } else if (a == "--agent") {
            agent_names.push_back(value());
        } else if (a == "--all-agents") {
            all_agents = true;
        } else if (a == "--config") {
            config_path = value();
        } else if (a == "--name") {
            sopt.name = value();
        } else if (a == "--workdir") {
            sopt.sandbox_working_dir = value();
        } else if (a == "--page-size") {
            std::string v = value();
            char* end = nullptr;
            unsigned long n = std::strtoul(v.c_str(), &end, 10);
            if (v.empty() || *end || n == 0 || n > 100000) fail("--page-size needs an integer in [1, 100000]");
            sopt.page_size = n;
        } else if (a == "--host") {
            hopt.http.host = value();
        } else if (a == "--port") {
            std::string v = value();
            char* end = nullptr;
            unsigned long n = std::strtoul(v.c_str(), &end, 10);
            if (v.empty() || *end || n > 65535) fail("--port needs an integer in [0, 65535]");
            hopt.http.port = static_cast<std::uint16_t>(n);
        } else if (a == "--path") {
            hopt.path = value();
            if (hopt.path.empty() || hopt.path[0] != '/') fail("--path must start with /");
        } else if (a == "--allow-origin") {
            hopt.allowed_origins.push_back(value());
        } else if (a == "--allow-host") {
            hopt.allowed_hosts.push_back(value());
        } else if (a == "--json-response") {
            hopt.json_response = true;
        } else if (a == "--log-level") {
            auto l = rath::parse_log_level(value());
            if (!l) fail("--log-level is one of debug, info, warning, error, off");
            rath::set_log_level(*l);
        } else {
            std::fprintf(stderr, "rath-mcp-serve: unknown option %s\n", argv[i]);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (!builtin && agent_names.empty() && !all_agents) {
        std::fprintf(stderr, "rath-mcp-serve: nothing to serve: give --builtin-tools, --agent NAME or --all-agents\n");
        usage(stderr, argv[0]);
        return 2;
    }

    // HTTP mode waits for SIGINT/SIGTERM with sigwait: blocked here, before any runtime
    // thread starts, so that every thread inherits the mask and none is killed by them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (http) pthread_sigmask(SIG_BLOCK, &set, nullptr);

    try {
        auto server = std::make_shared<rath::mcp::Server>(sopt);
        if (builtin)
            for (auto& t : rath::tool::global_system_tools().tools()) server->add_tool(t);
        if (!agent_names.empty() || all_agents) {
            auto store = config_path ? std::make_shared<rath::config::ConfigStore>(*config_path)
                                     : rath::config::ConfigStore::load();
            std::vector<rath::flow::ConfigAgent> chosen;
            try {
                if (all_agents) chosen = rath::flow::read_config_agents(*store);
                else
                    for (auto& n : agent_names) chosen.push_back(rath::flow::find_config_agent(*store, n));
            } catch (const rath::Error& e) {
                fail(e.what());
            }
            if (chosen.empty()) fail("no agents in " + store->path().string());
            for (auto& c : chosen) {
                rath::flow::Agent agent = rath::flow::make_config_agent(c, store);
                server->add_workflow(c.name, c.description.value_or("Runs the rath agent '" + c.name + "' on a message."),
                                     agent.ptr());
            }
        }

        if (!http) {
            rath::mcp::serve_stdio(server);
            return 0;
        }
        rath::mcp::StreamableHttpServer endpoint(server, hopt);
        endpoint.start();
        std::printf("listening on %s\n", endpoint.url().c_str());
        std::fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
        endpoint.close();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rath-mcp-serve: %s\n", e.what());
        return 1;
    }
}

}  // namespace rath::mcp_serve
