// rath config init | set | env on real files: what they write to config.json and
// credentials.json, what they refuse, and the variable table.
#include "cli/cli_support.hpp"
#include "support/env.hpp"
#include "support/files.hpp"

#include <rath/config/store.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace json = boost::json;
namespace fs = std::filesystem;

using rath::test::contains;
using rath::test::rath_cli;
using rath::test::read_file;

namespace {
unsigned mode_of(const fs::path& p) {
    struct stat st{};
    ::stat(p.c_str(), &st);
    return st.st_mode & 0777;
}
constexpr const char* key = "sk-init-0123456789abcdefKEY9";
}  // namespace

TEST_SUITE("cli/config") {

TEST_CASE("config init writes the provider, memory, MCP and sandbox sections and keeps the key in credentials.json") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard vars{{"RATH_TEST_INIT_KEY", key}};
    auto r = rath_cli({"config", "init", "--provider", "main", "--kind", "anthropic", "--model", "claude-test",
                       "--api-key-env", "RATH_TEST_INIT_KEY", "--memory-path", (env.path() / "mem").string(), "--mcp",
                       "everything=npx -y server-everything", "--sandbox-domain", "127.0.0.1:8080"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const fs::path cfg = env.path() / "config.json";
    const fs::path creds = env.path() / "credentials.json";
    CHECK(contains(r.out, "wrote " + cfg.string()));
    CHECK_FALSE(contains(read_file(cfg), key));
    CHECK(mode_of(creds) == 0600);
    CHECK(json::parse(read_file(creds)).at("llm").at("providers").at("main") == key);

    rath::config::ConfigStore store(cfg);
    auto p = store.get_llm_provider();
    CHECK(p.provider_kind == "anthropic");
    CHECK(p.model == "claude-test");
    CHECK(p.api_key == key);
    CHECK(store.get_memory_provider().path == (env.path() / "mem").string());
    CHECK(store.get_mcp_server("everything").command == std::vector<std::string>{"npx", "-y", "server-everything"});
    CHECK(store.enabled_mcp_servers().size() == 1);
    CHECK(store.document().at("backend").at("providers").at("opensandbox").at("domain") == "127.0.0.1:8080");

    SUBCASE("a second init refuses to overwrite without --force") {
        auto again = rath_cli({"config", "init", "--model", "other"});
        CHECK(again.exit_code == 1);
        CHECK(contains(again.err, "exists"));
        CHECK(rath::config::ConfigStore(cfg).get_llm_provider().model == "claude-test");
    }
    SUBCASE("config show names credentials.json as the key's source, masked") {
        auto show = rath_cli({"config", "show"});
        REQUIRE(show.exit_code == 0);
        CHECK(contains(show.out, "sk-****KEY9  (credentials.json)"));
        CHECK_FALSE(contains(show.out, key));
    }
}

TEST_CASE("config init --interactive asks for each value on stdin") {
    rath::test::CleanEnv env;
    const std::string rath = rath::test::bin_path("rath");
    auto r = rath::test::run_child(
        "/bin/sh", {"-c", "printf 'asked\\nopenai\\ngpt-asked\\nhttp://127.0.0.1:9/v1\\nsk-typed-00000000000000\\n\\n\\n' | " +
                              rath + " config init -i"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(contains(r.err, "provider kind"));
    rath::config::ConfigStore store(env.path() / "config.json");
    auto p = store.get_llm_provider("asked");
    CHECK(p.model == "gpt-asked");
    CHECK(p.base_url == "http://127.0.0.1:9/v1");
    CHECK(p.api_key == "sk-typed-00000000000000");
    CHECK(store.default_llm_provider() == "asked");

    auto cut = rath::test::run_child("/bin/sh", {"-c", "printf 'only-one\\n' | " + rath + " config init -i --force"});
    CHECK(cut.exit_code == 1);
    CHECK(contains(cut.err, "input ended"));
}

TEST_CASE("config set changes one value by its dotted path, validates it, and moves keys to credentials.json") {
    rath::test::CleanEnv env;
    REQUIRE(rath_cli({"config", "init", "--provider", "main", "--model", "m1"}).exit_code == 0);
    const fs::path cfg = env.path() / "config.json";

    auto n = rath_cli({"config", "set", "llm.providers.main.max_tokens", "512"});
    REQUIRE_MESSAGE(n.exit_code == 0, n.err);
    CHECK(rath::config::ConfigStore(cfg).get_llm_provider("main").max_tokens == 512);

    auto text = rath_cli({"config", "set", "llm.providers.main.model", "gpt-4o-mini"});
    REQUIRE(text.exit_code == 0);
    CHECK(rath::config::ConfigStore(cfg).get_llm_provider("main").model == "gpt-4o-mini");

    auto forced = rath_cli({"config", "set", "--string", "custom.answer", "42"});
    REQUIRE(forced.exit_code == 0);
    CHECK(json::parse(read_file(cfg)).at("custom").at("answer") == "42");

    auto secret = rath_cli({"config", "set", "llm.providers.main.api_key", key});
    REQUIRE(secret.exit_code == 0);
    CHECK_FALSE(contains(secret.out, key));
    CHECK_FALSE(contains(read_file(cfg), key));
    CHECK(contains(read_file(env.path() / "credentials.json"), key));

    auto bad = rath_cli({"config", "set", "llm.providers.main.max_tokens", "\"many\""});
    CHECK(bad.exit_code == 1);
    CHECK(contains(bad.err, "llm.providers.main.max_tokens: expected an integer or null"));
    CHECK(rath::config::ConfigStore(cfg).get_llm_provider("main").max_tokens == 512);

    auto inside_scalar = rath_cli({"config", "set", "llm.default_provider.x", "1"});
    CHECK(inside_scalar.exit_code == 1);
    CHECK(contains(inside_scalar.err, "llm.default_provider is not an object"));

    auto empty_part = rath_cli({"config", "set", "llm..x", "1"});
    CHECK(empty_part.exit_code == 2);

    auto cleared = rath_cli({"config", "set", "llm.providers.main.api_key", "null"});
    REQUIRE(cleared.exit_code == 0);
    CHECK_FALSE(fs::exists(env.path() / "credentials.json"));
}

TEST_CASE("config env lists every declared variable with its kind and masks the value of a set secret") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard vars{{"OPENAI_API_KEY", key}, {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"}};
    auto r = rath_cli({"config", "env"});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "OPENAI_API_KEY"));
    CHECK(contains(r.out, "sk-****KEY9"));
    CHECK(contains(r.out, "http://127.0.0.1:9/v1"));
    CHECK_FALSE(contains(r.out, key));
    auto j = rath_cli({"--json", "config", "env"});
    REQUIRE(j.exit_code == 0);
    const auto rows = json::parse(j.out).as_array();
    bool saw_home = false;
    for (const auto& row : rows) {
        if (row.at("name") == "OPENRATH_HOME") {
            saw_home = true;
            CHECK(row.at("kind") == "routing");
            CHECK(row.at("value") == json::value(env.path().string()));
        }
        if (row.at("name") == "OPENAI_API_KEY") CHECK(row.at("value") == "sk-****KEY9");
    }
    CHECK(saw_home);
}

}  // TEST_SUITE
