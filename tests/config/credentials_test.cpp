// credentials.json: keys split out of config.json on save and merged back on load
// (spec llm.md §8.6, the upstream credentials split).
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/log_capture.hpp"

#include <rath/config/store.hpp>
#include <rath/log.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

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
bool logged(const LogCapture& logs, std::string_view text) {
    for (const auto& m : logs.messages("rath.config"))
        if (m.find(text) != std::string::npos) return true;
    return false;
}
}  // namespace

TEST_SUITE("config/credentials") {

TEST_CASE("save moves every provider key of llm, memory and backend into credentials.json with mode 0600") {
    CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, R"({"llm":{"providers":{"main":{"provider_kind":"openai","api_key":"sk-main"},
                                           "keyless":{"provider_kind":"litellm"}}},
                      "memory":{"providers":{"mem":{"backend_kind":"local","api_key":"mem-key"}}},
                      "backend":{"providers":{"os":{"backend_kind":"opensandbox","api_key":"os-key"}}}})");
    ConfigStore s(p);
    s.save();
    const std::string cfg = read_file(p);
    CHECK(cfg.find("sk-main") == std::string::npos);
    CHECK(cfg.find("mem-key") == std::string::npos);
    CHECK(cfg.find("os-key") == std::string::npos);
    const fs::path side = env.path() / "credentials.json";
    REQUIRE(fs::exists(side));
    CHECK(mode_of(side) == 0600);
    CHECK(json::parse(read_file(side)) == json::parse(R"({"llm":{"providers":{"main":"sk-main"}},
        "memory":{"providers":{"mem":"mem-key"}},"backend":{"providers":{"os":"os-key"}},"version":1})"));
    // The store that saved still has its keys, and a fresh load merges them back.
    CHECK(s.get_llm_provider("main").api_key == "sk-main");
    ConfigStore again(p);
    CHECK(again.get_llm_provider("main").api_key == "sk-main");
    CHECK_FALSE(again.get_llm_provider("keyless").api_key);
    CHECK(again.document().at("backend").at("providers").at("os").at("api_key") == "os-key");
    CHECK(again.document().at("memory").at("providers").at("mem").at("api_key") == "mem-key");
    for (const auto& e : fs::directory_iterator(env.path())) {
        const auto name = e.path().filename().string();
        CHECK(name.rfind(".credentials_", 0) != 0);  // no temp file left behind
        CHECK(name.rfind(".config_", 0) != 0);
    }
}

TEST_CASE("a save with no key left deletes credentials.json") {
    CleanEnv env;
    const fs::path p = env.path() / "config.json";
    ConfigStore s(p);
    s.set_llm_provider("main", {.provider_kind = "openai", .api_key = "sk-1"});
    s.save();
    CHECK(fs::exists(env.path() / "credentials.json"));
    s.set_llm_provider("main", {.provider_kind = "openai"});
    s.save();
    CHECK_FALSE(fs::exists(env.path() / "credentials.json"));
    CHECK_FALSE(ConfigStore(p).get_llm_provider("main").api_key);
}

TEST_CASE("an inline key in config.json wins over the sidecar and moves out on the next save") {
    CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, R"({"llm":{"providers":{"main":{"provider_kind":"openai","api_key":"inline"},
                                           "other":{"provider_kind":"anthropic"}}}})");
    write_file(env.path() / "credentials.json",
               R"({"llm":{"providers":{"main":"old","other":"sk-other","gone":"x"}},"version":1})");
    ConfigStore s(p);
    CHECK(s.get_llm_provider("main").api_key == "inline");
    CHECK(s.get_llm_provider("other").api_key == "sk-other");
    LogCapture logs;
    const auto level = rath::log_level();
    rath::set_log_level(rath::LogLevel::info);
    s.save();
    rath::set_log_level(level);
    CHECK(logged(logs, "moved the API keys"));
    CHECK(read_file(p).find("inline") == std::string::npos);
    // Keys of entries that no longer exist are not carried along.
    CHECK(json::parse(read_file(env.path() / "credentials.json")) ==
          json::parse(R"({"llm":{"providers":{"main":"inline","other":"sk-other"}},"version":1})"));
}

TEST_CASE("a corrupt credentials.json is ignored with a warning and the config still loads") {
    CleanEnv env;
    const fs::path p = env.path() / "config.json";
    write_file(p, R"({"llm":{"providers":{"main":{"provider_kind":"openai"}}}})");
    for (const char* garbage : {"{not json", "[1,2]", "\x01\x02\xff"}) {
        write_file(env.path() / "credentials.json", garbage);
        LogCapture logs;
        ConfigStore s(p);
        CHECK_FALSE(s.get_llm_provider("main").api_key);
        CHECK(logged(logs, "credentials.json is ignored"));
    }
    // Wrong shapes inside a valid document are skipped entry by entry.
    write_file(env.path() / "credentials.json", R"({"llm":{"providers":{"main":42}},"memory":[],"version":1})");
    CHECK_FALSE(ConfigStore(p).get_llm_provider("main").api_key);
}

}  // TEST_SUITE
