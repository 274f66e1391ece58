// The declared environment variables (rath/config/env.hpp): one table the LLM clients
// resolve through and the rath command prints.
#include "support/env.hpp"

#include <rath/config/env.hpp>
#include <rath/llm/credentials.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace rath::config;

TEST_SUITE("config/env") {

TEST_CASE("the table is sorted, unique, and declares every variable a provider kind falls back to") {
    auto vars = declared_env();
    REQUIRE(vars.size() > 10);
    CHECK(std::is_sorted(vars.begin(), vars.end(), [](const EnvVar& a, const EnvVar& b) { return a.name < b.name; }));
    CHECK(std::adjacent_find(vars.begin(), vars.end(),
                             [](const EnvVar& a, const EnvVar& b) { return a.name == b.name; }) == vars.end());
    for (std::string_view kind : {"openai", "anthropic", "litellm", "atlascloud"})
        for (auto field : {ProviderField::api_key, ProviderField::base_url, ProviderField::model})
            for (bool azure : {false, true})
                for (auto name : provider_env(kind, field, azure)) {
                    CAPTURE(name);
                    CHECK_NOTHROW((void)declared(name));
                    if (field == ProviderField::api_key) CHECK(declared(name).kind == EnvKind::secret);
                }
    CHECK(provider_env("no-such-kind", ProviderField::api_key).empty());
}

TEST_CASE("the OpenAI key order puts the Azure keys first only for an Azure endpoint") {
    auto plain = provider_env("openai", ProviderField::api_key, false);
    auto azure = provider_env("openai", ProviderField::api_key, true);
    REQUIRE(plain.size() == 2);
    CHECK(plain[0] == "OPENAI_API_KEY");
    REQUIRE(azure.size() == 3);
    CHECK(azure[0] == "AZURE_OPENAI_API_KEY");
    CHECK(azure[2] == "OPENAI_API_KEY");
}

TEST_CASE("reading an undeclared variable is an error that lists the declared ones") {
    CHECK_THROWS_WITH_AS((void)env("OPENAI_API_KEYS"),
                         doctest::Contains("'OPENAI_API_KEYS' is not a declared OpenRath environment variable; declared: ["),
                         ConfigError);
    CHECK_THROWS_AS((void)rath::llm::env_value("NOT_RATHS"), ConfigError);
}

TEST_CASE("values are trimmed, blank is unset, and flags take 1 true yes on in any case") {
    rath::test::CleanEnv clean;
    {
        rath::test::EnvGuard g({{"OPENAI_BASE_URL", "  http://x/v1 \n"}, {"OPENAI_DEFAULT_MODEL", "   "}});
        CHECK(env("OPENAI_BASE_URL") == "http://x/v1");
        CHECK_FALSE(env("OPENAI_DEFAULT_MODEL"));
    }
    for (const char* on : {"1", "true", "YES", "On"}) {
        rath::test::EnvGuard g({{"NO_COLOR", on}});
        CHECK(env_flag("NO_COLOR"));
    }
    for (const char* off : {"0", "false", "", "nope"}) {
        rath::test::EnvGuard g({{"NO_COLOR", off}});
        CHECK_FALSE(env_flag("NO_COLOR"));
    }
}

TEST_CASE("resolve_setting prefers the explicit value, then the variables in order") {
    rath::test::CleanEnv clean;
    rath::test::EnvGuard g({{"AZURE_OPENAI_API_KEY", "azure"}, {"OPENAI_API_KEY", "openai"}});
    using rath::llm::resolve_setting;
    CHECK(resolve_setting(std::string(" mine "), provider_env("openai", ProviderField::api_key)) == "mine");
    CHECK(resolve_setting(std::string("  "), provider_env("openai", ProviderField::api_key)) == "openai");
    CHECK(resolve_setting(std::nullopt, provider_env("openai", ProviderField::api_key, true)) == "azure");
    CHECK(resolve_setting(std::nullopt, provider_env("litellm", ProviderField::api_key)).empty());
}

}  // TEST_SUITE
