#pragma once
// Agents defined by name in config.json's "agents" section: one reader and one builder
// for every program that serves or runs them (rath-mcp-serve, rath-worker), so an agent
// name means the same agent everywhere.
//
//   "agents": { "<name>": { "system_prompt": string (required),
//                           "provider": string (an llm.providers entry; default llm.default_provider),
//                           "model": string, "description": string,
//                           "max_tool_rounds": int in [1, 10000] (default 64),
//                           "mcp": [string] (MCP servers of the config whose tools the
//                                   agent gets; default none),
//                           "tools": [string] (tools the program linked in C++, by
//                                     name: see `linked_tools` below; default none),
//                           "backend": string (the sandbox backend a run's input session
//                                      is placed on, Session::to; unset: none, so the
//                                      built-in tools fail with "no sandbox backend"),
//                           "idempotent_tools": {"<tool name>": bool, ...} } }
//
// "idempotent_tools" overrides FlowToolCall::idempotent for this agent's runs: what a
// durable runner (rath-worker) does with a call of the tool that was cut short by a
// worker failure (true: run it again; false: report it interrupted). A tool not named
// keeps its own declaration (the built-in defaults are in rath/tool/flow_tool.hpp).
//
// The section is kept by the config store like any key it does not know. Tools reach
// processes that build agents from the config in two ways. "mcp": a tool written in any
// language, served by an MCP server those processes can start or reach, named in
// mcp.servers / mcpServers like any other (mcp/tools.hpp). "tools": a tool written in
// C++ and linked into the program itself (a worker built on rath/cluster/worker.hpp),
// which hands its tools to config_agent_options as `linked_tools`; a program that links
// none (the stock rath-worker, rath-mcp-serve) refuses an agent naming one.
//
// Thread safety: free functions over their arguments; safe from any thread.
// Errors: config::ConfigError (naming the file and key) for a malformed section;
// config::ConfigLookupError for an unknown agent or provider; make_config_agent throws
// what Provider::from_config and the Agent constructor throw.
#include <rath/config/store.hpp>
#include <rath/flow/agent.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::flow {

struct ConfigAgent {
    std::string name;
    std::string system_prompt;
    std::optional<std::string> provider{}, model{}, description{};
    int max_tool_rounds = 64;
    std::vector<std::string> mcp{};    // MCP server entries, in the order given
    std::vector<std::string> tools{};  // linked C++ tools, in the order given
    std::optional<std::string> backend{};
    std::map<std::string, bool> idempotent_tools{};
};

// Every entry of the "agents" section, in the file's order (none without the section).
[[nodiscard]] std::vector<ConfigAgent> read_config_agents(const config::ConfigStore& store);
// The entry `name`; ConfigLookupError listing the names there are when it is missing.
[[nodiscard]] ConfigAgent find_config_agent(const config::ConfigStore& store, std::string_view name);
// The options of the agent an entry describes: its provider (resolved in `store`),
// model and tool-round cap, its "tools" (taken by name from `linked_tools`) and then the
// tools of its MCP servers, after the agent's default tools. Each MCP server is started (or reached) once here to list its tools, and its
// connection is shared by every run of the options: this blocks, so call it off the
// runtime's threads. Throws ConfigLookupError for a "tools" name `linked_tools` lacks
// (listing the names it has), ConfigError when two of the agent's tools share a name,
// and what mcp_tools_from_config throws (ConfigLookupError for an unknown server,
// TransportError / McpError when it does not start or answer). A
// program that needs more (its own chat client) edits the options before building
// Agent(entry.system_prompt, options).
[[nodiscard]] AgentOptions config_agent_options(const ConfigAgent& entry,
                                                const std::shared_ptr<config::ConfigStore>& store,
                                                const tool::ToolSet& linked_tools = {});
// The entry's "tools" taken by name from `linked_tools`, in the order given; what
// config_agent_options adds. ConfigLookupError for a name `linked_tools` lacks (listing
// the names it has), ConfigError for a name given twice. Programs that link tools call
// it at start to refuse a config they cannot serve before any run.
[[nodiscard]] std::vector<tool::FlowToolPtr> linked_config_tools(const ConfigAgent& entry,
                                                                 const config::ConfigStore& store,
                                                                 const tool::ToolSet& linked_tools);
// Agent(entry.system_prompt, config_agent_options(entry, store, linked_tools)).
[[nodiscard]] Agent make_config_agent(const ConfigAgent& entry, const std::shared_ptr<config::ConfigStore>& store,
                                      const tool::ToolSet& linked_tools = {});

}  // namespace rath::flow
