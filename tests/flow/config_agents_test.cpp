// config.json's "agents" section (flow/config_agents.hpp): the durable-run keys.
#include "support/temp_dir.hpp"

#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <string>

namespace {

rath::config::ConfigStore store_with(const rath::test::TempDir& dir, const std::string& agents) {
    auto path = dir.path() / "config.json";
    std::ofstream(path) << R"({"version": 1, "agents": )" << agents << "}";
    return rath::config::ConfigStore(path);
}

}  // namespace

TEST_SUITE("flow/config_agents") {

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

}  // TEST_SUITE
