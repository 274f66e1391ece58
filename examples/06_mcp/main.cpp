// 06 — an agent whose tools come from an MCP server: the reference server of the MCP
// project, @modelcontextprotocol/server-everything, started over stdio. One connection
// serves every call; the server is closed at the end.
//
//   06_mcp                         runs `npx -y @modelcontextprotocol/server-everything stdio`
//   06_mcp node path/to/index.js stdio    runs that command instead (the ctest passes the
//                                          copy pinned in tests/integration/npm)
#include "../common/example_llm.hpp"

#include <rath/async/block_on.hpp>
#include <rath/flow.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/tool/dispatch.hpp>

#include <boost/json/serialize.hpp>

#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "Add 20 and 22"},
         "respond": {"tool_calls": [{"name": "get-sum", "arguments": {"a": 20, "b": 22}}]}},
        {"match": {"role": "tool"}, "respond": {"text": "The MCP server says: {{last}}"}}
    ]})");

    rath::mcp::McpServerOptions server;
    server.name = "everything";
    if (argc > 1)
        server.stdio.command.assign(argv + 1, argv + argc);
    else
        server.stdio.command = {"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"};
    server.call_timeout = std::chrono::seconds(30);
    // Progress and log messages of the server, as they arrive.
    server.client.on_event = [](const rath::mcp::ClientEvent& e) {
        if (auto* log = std::get_if<rath::mcp::LogEvent>(&e))
            std::printf("[server log %s] %s\n", log->level.c_str(), boost::json::serialize(log->data).c_str());
    };

    auto mcp = rath::mcp::McpServer::create(server);
    std::vector<rath::tool::FlowToolPtr> tools = rath::async::block_on(rath::mcp::async_mcp_tools_from_server(mcp));
    auto init_names = std::string();
    for (const auto& t : tools) init_names += (init_names.empty() ? "" : ", ") + t->name();
    std::printf("tools from server-everything: %s\n", init_names.c_str());

    // Call one tool directly, without any model.
    rath::Session scratch;
    for (const auto& t : tools)
        if (t->name() == "echo") {
            auto r = rath::tool::dispatch_flow_tool(scratch, t, {{"message", "hello from mcp"}});
            std::printf("echo -> %s\n", r.content.c_str());
        }

    // An agent that uses them.
    rath::flow::Agent agent("Use the MCP tools to answer.", {.loop = {.provider = llm.provider, .tools = tools}});
    rath::Session out = agent(rath::Session::from_user_message("Add 20 and 22 with the get-sum tool."));
    auto rows = out.chunks();  // waits for the loop
    std::cout << "transcript:\n" << out << "\n";
    std::printf("answer: %s\n", out.text().value_or("(none)").c_str());

    rath::async::block_on(mcp->async_close());
    std::printf("server connections made: %zu\n", mcp->connections());
    return out.text() ? 0 : 1;
}
