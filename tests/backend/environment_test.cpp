// The child environment of host commands (lib/backend/environment.hpp).
#include "backend/backend_support.hpp"
#include "support/env.hpp"

#include "lib/backend/environment.hpp"

#include <rath/backend/local.hpp>

namespace rb = rath::backend;
using rb::detail::child_environment;
using rb::detail::is_credential_variable;
using Env = std::vector<std::string>;

TEST_CASE("credential-looking variables are recognised by name pattern and by URL userinfo") {
    for (const char* n : {"OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                          "AWS_ACCESS_KEY_ID", "DB_PASSWORD", "MYSQL_PWD_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS",
                          "SSH_AUTH_SOCK", "XAUTHORITY", "npm_config__authToken", "my_secret", "Api_Key"})
        CHECK_MESSAGE(is_credential_variable(n, "v"), n);
    for (const char* n : {"PATH", "HOME", "LANG", "TERM", "SHELL", "USER", "PWD", "EDITOR", "TMPDIR"})
        CHECK_FALSE_MESSAGE(is_credential_variable(n, "v"), n);
    CHECK(is_credential_variable("DATABASE_URL", "postgres://app:hunter2@db:5432/app"));
    CHECK(is_credential_variable("HTTPS_PROXY_URL", "http://token@proxy:3128"));
    CHECK(is_credential_variable("git_url", "https://x-access:ghp_abc@github.com/o/r.git"));
    CHECK_FALSE(is_credential_variable("DATABASE_URL", "postgres://db:5432/app"));
    CHECK_FALSE(is_credential_variable("HOMEPAGE_URL", "https://example.com/a@b"));  // '@' past the authority
    CHECK_FALSE(is_credential_variable("MAILTO", "mailto:someone@example.com"));
    CHECK_FALSE(is_credential_variable("NOTE", "postgres://app:hunter2@db/app"));  // not a *URL name
}

TEST_CASE("the child environment follows the mode and explicit variables win") {
    const std::vector<std::string_view> parent{"PATH=/usr/bin", "OPENAI_API_KEY=sk-1", "DATABASE_URL=pg://u:p@h/d",
                                               "PLAIN_URL=https://h/", "LANG=C", "malformed", "=novalue",
                                               "CUSTOM_THING=1", "HOME=/root"};
    rb::HostOptions o;
    CHECK(child_environment(parent, o, std::nullopt) ==
          Env{"CUSTOM_THING=1", "HOME=/root", "LANG=C", "PATH=/usr/bin", "PLAIN_URL=https://h/"});
    o.credential_patterns = {"CUSTOM_*"};
    o.env_allow.push_back("OPENAI_API_KEY");  // an explicit exception to the scrub
    CHECK(child_environment(parent, o, std::nullopt) ==
          Env{"HOME=/root", "LANG=C", "OPENAI_API_KEY=sk-1", "PATH=/usr/bin", "PLAIN_URL=https://h/"});
    o.env_mode = rb::EnvMode::allowlist;
    o.env_allow = {"PATH"};
    CHECK(child_environment(parent, o, std::map<std::string, std::string>{{"GITHUB_TOKEN", "given"}}) ==
          Env{"GITHUB_TOKEN=given", "PATH=/usr/bin"});
    o.env_mode = rb::EnvMode::inherit;
    CHECK(child_environment(parent, o, std::nullopt).size() == 7);
}

TEST_CASE("a command on local does not see pattern-matched credentials in its environment") {
    rath::test::EnvGuard planted{{"RATH_TEST_DEPLOY_TOKEN", "planted-1"},
                                 {"RATH_TEST_DB_URL", "postgres://u:planted-2@h/d"},
                                 {"RATH_TEST_CREDENTIALS_FILE", "planted-3"}};
    rb::LocalBackend b;
    auto sb = b.open();
    auto r = std::get<rb::CommandResult>(b.dispatch(sb, rb::CommandRun{.cmd = std::vector<std::string>{"env"}}));
    CHECK(r.stdout_data.find("planted-") == std::string::npos);
    CHECK(r.stdout_data.find("PATH=") != std::string::npos);
    b.close(sb);
}
