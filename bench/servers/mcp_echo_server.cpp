// The rath MCP server side of bench/mcp_calls: rath::mcp::Server with one trivial tool,
// `echo` ({"text": string} -> that text), over stdio (default) or Streamable HTTP
// (--http: prints "listening on URL", serves until SIGINT/SIGTERM; --http --json answers
// each POST with one JSON body instead of an SSE stream).
//   build/bin/mcp_calls --tool echo --args '{"text":"hi"}' --label rath -- build/bin/mcp_echo_server
#include <rath/mcp/server.hpp>
#include <rath/mcp/server_http.hpp>
#include <rath/mcp/server_stdio.hpp>

#include <boost/json.hpp>

#include <csignal>
#include <cstdio>
#include <string_view>

namespace json = boost::json;
namespace asio = boost::asio;

namespace {
json::object echo_result(const json::object& args) {
    auto* t = args.if_contains("text");
    std::string text = t && t->is_string() ? std::string(t->get_string()) : std::string();
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}
}  // namespace

int main(int argc, char** argv) {
    bool http = argc > 1 && std::string_view(argv[1]) == "--http";
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (http) pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any runtime thread starts

    auto server = std::make_shared<rath::mcp::Server>(
        rath::mcp::ServerOptions{.name = "mcp-echo-server", .sandbox_backend = std::nullopt});
    rath::mcp::ToolDefinition echo{.name = "echo",
                                   .description = "Echo the provided text back to the caller.",
                                   .input_schema = json::parse(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
                                                       .as_object(),
                                   .handler = {}};
    echo.handler = [](json::object args, rath::mcp::CallContext&) -> asio::awaitable<json::object> {
        co_return echo_result(args);
    };
    server->add_tool(std::move(echo));
    if (!http) {
        rath::mcp::serve_stdio(server);
        return 0;
    }
    rath::mcp::StreamableHttpServerOptions options;
    options.json_response = argc > 2 && std::string_view(argv[2]) == "--json";
    rath::mcp::StreamableHttpServer endpoint(server, options);
    endpoint.start();
    std::printf("listening on %s\n", endpoint.url().c_str());
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    endpoint.close();
    return 0;
}
