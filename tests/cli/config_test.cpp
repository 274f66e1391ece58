// rath config show / check on a config.json the test writes: sources and masking, and a
// check against the fake LLM server, a closed port and a real MCP server (rath-mcp-serve).
#include "cli/cli_support.hpp"
#include "support/env.hpp"
#include "support/temp_dir.hpp"

#include <rath/fake_llm/server.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;

using rath::test::contains;
using rath::test::rath_cli;

namespace {

fs::path write_config(const fs::path& dir, const json::object& doc) {
    const fs::path path = dir / "config.json";
    std::ofstream(path) << json::serialize(doc);
    return path;
}

// The line of `key` in `config show` output.
std::string line_of(const std::string& out, const std::string& key) {
    std::size_t at = 0;
    while ((at = out.find(key + " ", at)) != std::string::npos) {
        if (at == 0 || out[at - 1] == '\n') return out.substr(at, out.find('\n', at) - at);
        ++at;
    }
    return {};
}

constexpr const char* secret = "sk-test-0123456789abcdefWXYZ";

}  // namespace

TEST_SUITE("cli/config") {

TEST_CASE("config show prints each value with its source, flag, environment, file or default, and masks secrets") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard vars{{"ANTHROPIC_API_KEY", "sk-ant-from-the-environment-9876"}};
    rath::test::TempDir dir;
    const auto cfg = write_config(
        dir.path(),
        {{"llm",
          {{"default_provider", "main"},
           {"providers",
            {{"main", {{"provider_kind", "openai"}, {"model", "gpt-test"}, {"api_key", secret}}},
             {"claude", {{"provider_kind", "anthropic"}, {"model", "claude-test"}}}}}}},
         {"mcp", {{"servers", {{"tools", {{"command", json::array{"some-server"}}, {"env", {{"API_TOKEN", "tok-0123456789abcdef"}}}}}}}}}});
    auto r = rath_cli({"--config", cfg.string(), "config", "show"});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(line_of(r.out, "config_file"), cfg.string()));
    CHECK(contains(line_of(r.out, "config_file"), "(flag --config)"));
    CHECK(contains(line_of(r.out, "llm.default_provider"), "main  (file)"));
    CHECK(contains(line_of(r.out, "llm.providers.main.model"), "gpt-test  (file)"));
    CHECK(contains(line_of(r.out, "llm.providers.main.api_key"), "sk-****WXYZ  (file)"));
    CHECK(contains(line_of(r.out, "llm.providers.claude.api_key"), "sk-****9876  (env ANTHROPIC_API_KEY)"));
    CHECK(contains(line_of(r.out, "mcp.servers.tools.env.API_TOKEN"), "tok****cdef  (file)"));
    CHECK(contains(line_of(r.out, "llm.embedding_provider"), "(default)"));
    CHECK_FALSE(contains(r.out, secret));
    CHECK_FALSE(contains(r.out, "from-the-environment"));
    CHECK_FALSE(contains(r.out, "0123456789abcdef"));

    SUBCASE("without --config the file comes from OPENRATH_HOME and --json lists the same entries") {
        fs::copy_file(cfg, env.path() / "config.json");
        auto j = rath_cli({"--json", "config", "show"});
        REQUIRE(j.exit_code == 0);
        bool saw_file = false, saw_key = false;
        const json::value entries = json::parse(j.out);
        for (const auto& e : entries.as_array()) {
            const auto& o = e.as_object();
            if (o.at("key") == "config_file") {
                saw_file = true;
                CHECK(o.at("source") == "env OPENRATH_HOME");
            }
            if (o.at("key") == "llm.providers.main.api_key") {
                saw_key = true;
                CHECK(o.at("value") == "sk-****WXYZ");
            }
        }
        CHECK(saw_file);
        CHECK(saw_key);
    }
}

TEST_CASE("config check sends one request per provider, fails an unreachable one and a missing key, and exits 1") {
    rath::test::CleanEnv env;
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    json::object providers{
        {"fake", {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", secret}, {"base_url", server.base_url()}}},
        {"closed", {{"provider_kind", "openai"}, {"model", "m"}, {"api_key", secret}, {"base_url", "http://127.0.0.1:1/v1"}}},
        {"keyless", {{"provider_kind", "anthropic"}, {"model", "m"}}}};
    const auto cfg = write_config(dir.path(), {{"llm", {{"default_provider", "fake"}, {"providers", providers}}}});
    auto r = rath_cli({"--config", cfg.string(), "config", "check", "--timeout", "5"});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.out, "ok    provider fake: key from file; answered in "));
    CHECK(contains(r.out, "FAIL  provider closed: key from file; request failed: "));
    CHECK(contains(r.out, "FAIL  provider keyless: no API key (set api_key in the entry or ANTHROPIC_API_KEY)"));
    CHECK(contains(r.out, "2 ok, 2 failed"));
    CHECK(server.stats().requests == 1);
    CHECK_FALSE(contains(r.out, secret));

    SUBCASE("a config whose providers all answer passes with exit code 0, --json for scripts") {
        const auto good = write_config(dir.path(), {{"llm", {{"providers", {{"fake", providers.at("fake")}}}}}});
        auto j = rath_cli({"--config", good.string(), "--json", "config", "check"});
        CHECK(j.exit_code == 0);
        auto o = json::parse(j.out).as_object();
        CHECK(o.at("ok").as_bool());
        CHECK(o.at("checks").as_array().size() == 2);  // the file, the provider
    }
    SUBCASE("--offline checks keys without a request") {
        auto o = rath_cli({"--config", cfg.string(), "config", "check", "--offline"});
        CHECK(o.exit_code == 1);
        CHECK(contains(o.out, "ok    provider closed: key from file"));
        CHECK(contains(o.out, "FAIL  provider keyless: no API key"));
        CHECK(server.stats().requests == 1);  // none more
    }
}

TEST_CASE("config check starts each enabled MCP server and reports its tools, or why it did not start") {
    rath::test::CleanEnv env;
    rath::test::TempDir dir;
    const std::string serve = std::string(RATH_BINARY_DIR) + "/bin/rath-mcp-serve";
    REQUIRE(::access(serve.c_str(), X_OK) == 0);
    const auto cfg = write_config(
        dir.path(), {{"mcp",
                      {{"default_enabled", json::array{"builtin", "broken"}},
                       {"servers",
                        {{"builtin", {{"command", json::array{serve, "--builtin-tools"}}}},
                         {"broken", {{"command", json::array{(dir.path() / "no-such-server").string()}}}}}}}}});
    auto r = rath_cli({"--config", cfg.string(), "config", "check"});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.out, "ok    mcp builtin: started; 6 tool(s)"));
    CHECK(contains(r.out, "FAIL  mcp broken: did not start: "));
}

}  // TEST_SUITE
