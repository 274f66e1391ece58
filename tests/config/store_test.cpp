// ~/.openrath/config.json: paths, schema, validation errors, save, cache (spec §8).
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/log_capture.hpp"

#include <rath/config/paths.hpp>
#include <rath/config/store.hpp>
#include <rath/llm/provider.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <thread>

#include <sys/stat.h>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace rath::config;
using namespace rath::test;

namespace {
unsigned mode_of(const fs::path& p) {
    struct stat st{};
    ::stat(p.c_str(), &st);
    return st.st_mode & 0777;
}
struct Cwd {
    fs::path old = fs::current_path();
    explicit Cwd(const fs::path& p) { fs::current_path(p); }
    ~Cwd() { fs::current_path(old); }
};
}  // namespace

TEST_CASE("OPENRATH_HOME wins and may name a missing directory") {
    rath::test::CleanEnv env;
    CHECK(resolve_config_dir() == fs::weakly_canonical(env.path()));
    CHECK(resolve_config_path() == fs::weakly_canonical(env.path()) / "config.json");
    rath::test::EnvGuard g({{"OPENRATH_HOME", (env.path() / "not-yet").c_str()}});
    CHECK(resolve_config_dir() == fs::weakly_canonical(env.path()) / "not-yet");
    CHECK_FALSE(fs::exists(env.path() / "not-yet"));
}

TEST_CASE("OPENRATH_HOME pointing at a file is an error") {
    rath::test::CleanEnv env;
    write_file(env.path() / "file", "x");
    rath::test::EnvGuard g({{"OPENRATH_HOME", (env.path() / "file").c_str()}});
    CHECK_THROWS_WITH_AS(resolve_config_dir(), doctest::Contains("exists but is not a directory"), ConfigPathError);
}

TEST_CASE("tilde expands and the project marker and home fallback are used") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard g({{"HOME", env.path().c_str()}, {"OPENRATH_HOME", "~/custom"}});
    CHECK(resolve_config_dir() == fs::weakly_canonical(env.path() / "custom"));
    rath::test::EnvGuard g2({{"OPENRATH_HOME", "  "}});
    fs::create_directories(env.path() / "proj" / ".openrath");
    {
        Cwd cwd(env.path() / "proj");
        CHECK(resolve_config_dir() == fs::canonical(env.path() / "proj" / ".openrath"));
        CHECK(is_project_local(env.path() / "proj" / ".openrath"));
        CHECK_FALSE(is_project_local(env.path()));
    }
    fs::create_directories(env.path() / "plain");
    Cwd cwd(env.path() / "plain");
    CHECK(resolve_config_dir() == env.path() / ".openrath");
}

TEST_CASE("a missing file gives the exact default document") {
    rath::test::CleanEnv env;
    ConfigStore s(env.path() / "config.json");
    CHECK_FALSE(s.loaded_from_file());
    CHECK(default_config_text() ==
          "{\n  \"version\": 1,\n  \"llm\": {\n    \"default_provider\": null,\n    \"embedding_provider\": null,\n"
          "    \"vlm_provider\": null,\n    \"providers\": {}\n  },\n  \"mcp\": {\n    \"default_enabled\": [],\n"
          "    \"servers\": {}\n  },\n  \"memory\": {\n    \"default_provider\": null,\n    \"providers\": {}\n  },\n"
          "  \"backend\": {\n    \"default_provider\": null,\n    \"providers\": {}\n  }\n}\n");
    CHECK(dump_pretty(s.document()) == default_config_text());
    CHECK_FALSE(fs::exists(env.path() / "config.json"));
}

TEST_CASE("save writes mode 0600 with a deny-all gitignore and leaves no temp file") {
    rath::test::CleanEnv env;
    const fs::path dir = env.path() / "sub" / "dir";
    ConfigStore s(dir / "config.json");
    s.set_llm_provider("main", {.provider_kind = "openai", .model = "gpt", .api_key = "k", .temperature = 0.7});
    s.save();
    CHECK(mode_of(dir / "config.json") == 0600);
    CHECK(read_file(dir / ".gitignore") == "*\n!.gitignore\n!config.json.example\n");
    write_file(dir / ".gitignore", "custom\n");
    s.save();
    CHECK(read_file(dir / ".gitignore") == "custom\n");
    for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().rfind(".config_", 0) != 0);
    const std::string text = read_file(dir / "config.json");
    CHECK(text.find("\"temperature\": 0.7") != std::string::npos);
    CHECK(text.back() == '\n');
    ConfigStore again(dir / "config.json");
    auto e = again.get_llm_provider("main");
    CHECK(e.model == "gpt");
    CHECK(e.temperature == 0.7);
    CHECK_FALSE(e.base_url);
}

TEST_CASE("unknown keys round trip at every level") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, R"({"zeta":1,"llm":{"x_sec":true,"providers":{"p":{"provider_kind":"anthropic","x_entry":[1]}}},
               "mcp":{"servers":{"fs":{"command":[],"x_srv":"y"}},"default_enabled":["fs"]},"custom":{"a":"ü"}})");
    ConfigStore s(p);
    s.save();
    auto doc = json::parse(read_file(p)).as_object();
    CHECK(doc.at("zeta").as_int64() == 1);
    CHECK(doc.at("custom").at("a") == "ü");
    CHECK(doc.at("llm").at("x_sec").as_bool());
    CHECK(doc.at("llm").at("providers").at("p").at("x_entry") == json::parse("[1]"));
    CHECK(doc.at("mcp").at("servers").at("fs").at("x_srv") == "y");
    CHECK(read_file(p).find("\"ü\"") != std::string::npos);  // non-ASCII unescaped
    std::vector<std::string> order;
    for (const auto& kv : doc) order.emplace_back(kv.key());
    CHECK(order == std::vector<std::string>{"version", "llm", "mcp", "memory", "backend", "zeta", "custom"});
    CHECK(s.enabled_mcp_servers().at(0).first == "fs");
}

TEST_CASE("bad files give errors naming the file and the problem") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, "{\n  \"llm\": ,\n}");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("is not valid JSON (line 2, col "), ConfigError);
    write_file(p, "[1]");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("top-level must be a JSON object, got array"), ConfigError);
    write_file(p, R"({"llm":{"providers":{"x":{"provider_kind":"bogus"}}}})");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("failed schema validation: llm.providers.x.provider_kind"), ConfigError);
    write_file(p, R"({"llm":{"providers":[]}})");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("llm.providers: expected an object"), ConfigError);
    write_file(p, R"({"mcp":{"servers":{"s":{"env":{}}}}})");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("mcp.servers.s.command: field required"), ConfigError);
    write_file(p, R"({"llm":{"providers":{"x":{"temperature":"0.5","max_tokens":"12"}}}})");
    ConfigStore lax(p);
    CHECK(lax.get_llm_provider("x").temperature == 0.5);
    CHECK(lax.get_llm_provider("x").max_tokens == 12);
}

TEST_CASE("a provider's record flag is read into Provider::record_llm, refused when not a bool, and kept only when set") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, R"({"llm":{"providers":{"x":{"model":"m","record":"yes"}}}})");
    CHECK_THROWS_WITH_AS(ConfigStore{p}, doctest::Contains("llm.providers.x.record: expected true, false or null"),
                         ConfigError);
    write_file(p, R"({"llm":{"default_provider":"x","providers":{"x":{"model":"m","record":true},"y":{"model":"n"}}}})");
    auto store = std::make_shared<ConfigStore>(p);
    CHECK(store->get_llm_provider("x").record == true);
    CHECK_FALSE(store->get_llm_provider("y").record);
    CHECK(rath::llm::Provider::from_config("x", store).record_llm == true);
    CHECK_FALSE(rath::llm::Provider::from_config("y", store).record_llm);
    store->save();
    const json::value saved = json::parse(read_file(p));
    CHECK(saved.at("llm").at("providers").at("x").at("record") == json::value(true));
    CHECK_FALSE(saved.at("llm").at("providers").at("y").as_object().contains("record"));
}

TEST_CASE("find_provider_by_kind prefers the default entry of that kind") {
    rath::test::CleanEnv env;
    ConfigStore s(env.path() / "config.json");
    s.set_llm_provider("a1", {.provider_kind = "anthropic", .model = "c1"});
    s.set_llm_provider("o1", {.provider_kind = "openai", .model = "g1"});
    s.set_llm_provider("o2", {.provider_kind = "openai", .model = "g2"});
    CHECK(s.find_provider_by_kind("openai")->first == "o1");
    s.set_default_llm_provider("o2");
    CHECK(s.find_provider_by_kind("openai")->first == "o2");
    CHECK(s.find_provider_by_kind("anthropic")->first == "a1");
    CHECK_FALSE(s.find_provider_by_kind("litellm"));
    CHECK(s.llm_provider_names() == std::vector<std::string>{"a1", "o1", "o2"});
    CHECK_THROWS_WITH_AS(s.get_memory_provider(), doctest::Contains("no memory provider name given"), ConfigLookupError);
    CHECK_THROWS_WITH_AS(s.get_mcp_server("zz"), doctest::Contains("MCP server 'zz' not found"), ConfigLookupError);
}

TEST_CASE("the cache returns the same store until the file changes") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    CHECK(ConfigStore::load(p) != ConfigStore::load(p));  // missing file: never cached
    ConfigStore(p).save();
    auto a = ConfigStore::load(p);
    CHECK(ConfigStore::load(p) == a);
    a->set_llm_provider("n", {.model = "m"});
    a->save();
    auto b = ConfigStore::load(p);
    CHECK(b != a);
    CHECK(b->has_llm_provider("n"));
    write_file(p, read_file(p) + "\n");  // external rewrite: new size
    CHECK(ConfigStore::load(p) != b);
}

TEST_CASE("concurrent saves leave one valid file and no temp files") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    std::vector<std::thread> ts;
    for (int i = 0; i < 5; ++i)
        ts.emplace_back([&, i] {
            ConfigStore s(p);
            s.set_llm_provider("w" + std::to_string(i), {.model = "m"});
            s.save();
        });
    for (auto& t : ts) t.join();
    ConfigStore s(p);  // parses: the last rename won, nothing torn
    CHECK(s.llm_provider_names().size() >= 1);
    CHECK(s.llm_provider_names().size() <= 5);
    for (const auto& e : fs::directory_iterator(env.path())) CHECK(e.path().filename().string().rfind(".config_", 0) != 0);
}

TEST_CASE("loose permissions warn once per file") {
    rath::test::CleanEnv env;
    const fs::path p = env.path() / "config.json";
    ConfigStore(p).save();
    rath::test::LogCapture log;
    ConfigStore quiet(p);
    CHECK(log.messages("rath.config").empty());
    ::chmod(p.c_str(), 0644);
    ConfigStore loud(p);
    ConfigStore again(p);
    auto warnings = log.messages("rath.config");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("644") != std::string::npos);
    CHECK(warnings[0].find("chmod 600") != std::string::npos);
}

TEST_CASE("a project gitignore is amended once and never created") {
    rath::test::CleanEnv env;
    const fs::path root = env.path() / "proj";
    fs::create_directories(root / ".openrath");
    Cwd cwd(root);
    ConfigStore(root / ".openrath" / "config.json").save();
    CHECK_FALSE(fs::exists(root / ".gitignore"));
    write_file(root / ".gitignore", "node_modules");
    ConfigStore(root / ".openrath" / "config.json").save();
    ConfigStore(root / ".openrath" / "config.json").save();
    CHECK(read_file(root / ".gitignore") == "node_modules\n.openrath/\n");
}
