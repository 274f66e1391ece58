// Agents defined in config.json (flow/config_agents.hpp): the section's reader (the
// durable-run keys among the rest) and the agent built from an entry, with the tools of
// the MCP servers it names (a real stdio MCP server, the test helper) called by a
// scripted model over HTTP.
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

#include <rath/fake_llm/server.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

const std::string test_server = std::string(RATH_BINARY_DIR) + "/bin/mcp_test_server";

// config.json with provider "fake" (the server), MCP server "t" (the helper, its tools
// as they are) and "p" (the same helper, its tools prefixed "p_"), and `agents`.
std::shared_ptr<rath::config::ConfigStore> write_config(const fs::path& dir, const std::string& base_url,
                                                        json::object agents) {
    json::object doc{
        {"llm",
         {{"default_provider", "fake"},
          {"providers",
           {{"fake", {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", "sk-local"}, {"base_url", base_url}}}}}}},
        {"mcpServers",
         {{"t", {{"command", test_server}}}, {"p", {{"command", test_server}, {"tool_prefix", "p_"}}}}},
        {"agents", std::move(agents)}};
    rath::test::write_file(dir / "config.json", json::serialize(doc));
    fs::permissions(dir / "config.json", fs::perms::owner_read | fs::perms::owner_write);
    return std::make_shared<rath::config::ConfigStore>(dir / "config.json");
}

// config.json with only an "agents" section (given as JSON text).
rath::config::ConfigStore store_with(const rath::test::TempDir& dir, const std::string& agents) {
    auto path = dir.path() / "config.json";
    std::ofstream(path) << R"({"version": 1, "agents": )" << agents << "}";
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    return rath::config::ConfigStore(path);
}

bool has_tool(const rath::tool::ToolSet& tools, const std::string& name) {
    return std::any_of(tools.begin(), tools.end(), [&](const auto& t) { return t->name() == name; });
}

struct Pair {
    long long a = 0, b = 0;
};
BOOST_DESCRIBE_STRUCT(Pair, (), (a, b))

// A tool as a program links it: C++, typed arguments.
rath::tool::FlowToolPtr multiply_tool() {
    return rath::tool::make_tool<Pair>("multiply", "Multiply two integers.",
                                       [](rath::Session, Pair p) { return boost::json::value{{"product", p.a * p.b}}; });
}

}  // namespace

TEST_SUITE("flow/config_agents") {

TEST_CASE("an agent's mcp servers give it their tools, and a run calls one through the server") {
    rath::test::CleanEnv env;
    rath::fake_llm::Server llm({.mode = rath::fake_llm::Mode::script,
                                .script = R"({"rules": [
                                  {"match": {"role": "user"},
                                   "respond": {"tool_calls": [{"name": "echo", "arguments": {"text": "from the config's server"}}]}},
                                  {"match": {"role": "tool"}, "respond": {"text": "The tool said: {{last}}"}}]})"});
    llm.start();
    auto store = write_config(env.path(), llm.base_url(),
                              {{"helper", {{"system_prompt", "Use your tools."}, {"mcp", json::array{"t", "p"}}}}});
    const auto entry = rath::flow::find_config_agent(*store, "helper");
    CHECK(entry.mcp == std::vector<std::string>{"t", "p"});
    const auto options = rath::flow::config_agent_options(entry, store);
    CHECK(has_tool(options.loop.tools, "echo"));
    CHECK(has_tool(options.loop.tools, "add"));
    CHECK(has_tool(options.loop.tools, "p_echo"));

    rath::flow::Agent agent(entry.system_prompt, options);
    const rath::Session out = agent(rath::Session::from_user_message("Echo something."));
    const auto rows = out.chunks();
    REQUIRE(rows.size() == 4);  // user, tool call, tool result, answer
    CHECK(json::serialize(rows[2]->payload()).find("from the config's server") != std::string::npos);
    CHECK(json::serialize(rows[3]->payload()).find("The tool said:") != std::string::npos);
}

TEST_CASE("an agent entry with a malformed mcp list, an unknown server or clashing tool names is refused") {
    rath::test::CleanEnv env;
    auto store = write_config(env.path(), "http://127.0.0.1:9/v1",
                              {{"not_a_list", {{"system_prompt", "x"}, {"mcp", "t"}}},
                               {"unknown", {{"system_prompt", "x"}, {"mcp", json::array{"nope"}}}},
                               {"clash", {{"system_prompt", "x"}, {"mcp", json::array{"t", "t"}}}}});
    CHECK_THROWS_WITH_AS((void)rath::flow::read_config_agents(*store),
                         doctest::Contains("agents.not_a_list.mcp must be a list of MCP server names"),
                         rath::config::ConfigError);
    // The rest of the section reads without the malformed entry.
    json::object doc = store->document();
    doc["agents"].as_object().erase("not_a_list");
    rath::test::write_file(env.path() / "config.json", json::serialize(doc));
    store = std::make_shared<rath::config::ConfigStore>(env.path() / "config.json");
    CHECK_THROWS_AS((void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "unknown"), store),
                    rath::config::ConfigLookupError);
    CHECK_THROWS_WITH_AS(
        (void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "clash"), store),
        doctest::Contains("tool 'echo' of MCP server 't' has the name of another tool of the agent"),
        rath::config::ConfigError);
}

TEST_CASE("an agent entry names its sandbox backend and which tools it declares idempotent; both are optional") {
    rath::test::TempDir dir;
    auto store = store_with(dir, R"({
        "shell": {"system_prompt": "p", "backend": "local",
                  "idempotent_tools": {"run_shell_command": true, "read_workspace_file": false}},
        "plain": {"system_prompt": "q"}})");
    const auto shell = rath::flow::find_config_agent(store, "shell");
    CHECK(shell.backend == std::optional<std::string>("local"));
    CHECK(shell.idempotent_tools == std::map<std::string, bool>{{"read_workspace_file", false}, {"run_shell_command", true}});
    const auto plain = rath::flow::find_config_agent(store, "plain");
    CHECK_FALSE(plain.backend.has_value());
    CHECK(plain.idempotent_tools.empty());
}

TEST_CASE("an idempotent_tools that is not an object of booleans, or a backend that is not a string, is refused naming the key") {
    rath::test::TempDir dir;
    CHECK_THROWS_WITH_AS((void)rath::flow::read_config_agents(store_with(dir, R"({"a": {"system_prompt": "p", "idempotent_tools": ["x"]}})")),
                         doctest::Contains("agents.a.idempotent_tools must be an object of booleans"),
                         rath::config::ConfigError);
    CHECK_THROWS_WITH_AS((void)rath::flow::read_config_agents(store_with(dir, R"({"a": {"system_prompt": "p", "idempotent_tools": {"x": "yes"}}})")),
                         doctest::Contains("agents.a.idempotent_tools.x must be true or false"),
                         rath::config::ConfigError);
    CHECK_THROWS_WITH_AS((void)rath::flow::read_config_agents(store_with(dir, R"({"a": {"system_prompt": "p", "backend": 3}})")),
                         doctest::Contains("agents.a.backend must be a string"),
                         rath::config::ConfigError);
}

TEST_CASE("an agent's tools list takes the program's linked C++ tools by name, and a run calls one in process") {
    rath::test::CleanEnv env;
    rath::fake_llm::Server llm({.mode = rath::fake_llm::Mode::script,
                                .script = R"({"rules": [
                                  {"match": {"role": "user"},
                                   "respond": {"tool_calls": [{"name": "multiply", "arguments": {"a": 6, "b": 7}}]}},
                                  {"match": {"role": "tool"}, "respond": {"text": "It is {{last}}"}}]})"});
    llm.start();
    auto store = write_config(env.path(), llm.base_url(),
                              {{"calc", {{"system_prompt", "Multiply."}, {"tools", json::array{"multiply"}}, {"mcp", json::array{"t"}}}}});
    const auto entry = rath::flow::find_config_agent(*store, "calc");
    CHECK(entry.tools == std::vector<std::string>{"multiply"});
    const rath::tool::ToolSet linked{multiply_tool()};
    const auto options = rath::flow::config_agent_options(entry, store, linked);
    CHECK(has_tool(options.loop.tools, "multiply"));
    CHECK(has_tool(options.loop.tools, "echo"));  // the MCP server's, beside it
    const rath::Session out = rath::flow::Agent(entry.system_prompt, options)(rath::Session::from_user_message("6 times 7?"));
    const auto rows = out.chunks();
    REQUIRE(rows.size() == 4);
    CHECK(json::serialize(rows[2]->payload()).find("42") != std::string::npos);
}

TEST_CASE("a tools name the program does not link, a malformed tools list or a tool named twice is refused") {
    rath::test::CleanEnv env;
    auto store = write_config(env.path(), "http://127.0.0.1:9/v1",
                              {{"missing", {{"system_prompt", "x"}, {"tools", json::array{"multiply", "divide"}}}},
                               {"twice", {{"system_prompt", "x"}, {"tools", json::array{"multiply", "multiply"}}}},
                               {"clash", {{"system_prompt", "x"}, {"tools", json::array{"echo"}}, {"mcp", json::array{"t"}}}}});
    const rath::tool::ToolSet linked{multiply_tool()};
    CHECK_THROWS_WITH_AS(
        (void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "missing"), store, linked),
        doctest::Contains("agents.missing: tool 'divide' is not linked into this program; it links ['multiply']"),
        rath::config::ConfigLookupError);
    // A program that links no tools (the stock rath-worker) says so.
    CHECK_THROWS_WITH_AS((void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "missing"), store),
                         doctest::Contains("tool 'multiply' is not linked into this program; it links []"),
                         rath::config::ConfigLookupError);
    CHECK_THROWS_WITH_AS(
        (void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "twice"), store, linked),
        doctest::Contains("agents.twice: tool 'multiply' is named twice"), rath::config::ConfigError);
    const rath::tool::ToolSet echo_too{multiply_tool(), rath::tool::make_tool<Pair>("echo", "Not the server's.", [](rath::Session, Pair) {
                                           return boost::json::value("x");
                                       })};
    CHECK_THROWS_WITH_AS(
        (void)rath::flow::config_agent_options(rath::flow::find_config_agent(*store, "clash"), store, echo_too),
        doctest::Contains("tool 'echo' of MCP server 't' has the name of another tool of the agent"),
        rath::config::ConfigError);
    rath::test::TempDir dir;
    CHECK_THROWS_WITH_AS((void)rath::flow::read_config_agents(store_with(dir, R"({"a": {"system_prompt": "p", "tools": "multiply"}})")),
                         doctest::Contains("agents.a.tools must be a list of tool names"), rath::config::ConfigError);
}

}  // TEST_SUITE
