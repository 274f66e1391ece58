// The examples take a provider key from config.json as well as from the environment:
// a key kept only in config.json reaches the provider it names instead of sending the
// example to its in-process offline server.
#include "support/child_process.hpp"
#include "support/env.hpp"

#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace {

// Runs `bin` to the end and returns its stdout and exit status.
std::pair<std::string, int> run_to_end(const std::string& bin) {
    auto child = rath::test::spawn_with_stdout_pipe(bin, {});
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(child.out_fd, buf, sizeof buf)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(child.out_fd);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace

TEST_SUITE("examples/config_key") {

TEST_CASE("an example with its key only in config.json talks to the provider config.json names") {
    rath::test::CleanEnv env;  // no provider variables; OPENRATH_HOME is a fresh directory
    rath::test::EnvGuard online{{"RATH_EXAMPLES_OFFLINE", nullptr}};
    rath::fake_llm::ServerOptions options;
    options.mode = rath::fake_llm::Mode::script;
    options.script = R"({"responses": [{"text": "Answered by the server named in config.json."}]})";
    rath::fake_llm::Server configured(options);
    configured.start();
    {
        rath::config::ConfigStore store(env.path() / "config.json");
        store.set_llm_provider("mine", {.model = "configured-model", .api_key = "sk-config-only",
                                        .base_url = configured.base_url()});
        store.set_default_llm_provider("mine");
        store.save();
    }
    auto [out, rc] = run_to_end(std::string(RATH_BINARY_DIR) + "/bin/01_hello_agent");
    CHECK(rc == 0);
    CHECK(out.find("Answered by the server named in config.json.") != std::string::npos);
    CHECK(out.find("(no API key") == std::string::npos);
    CHECK(configured.stats().requests == 1);
}

TEST_CASE("an example with no key anywhere uses its offline server") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard online{{"RATH_EXAMPLES_OFFLINE", nullptr}};
    auto [out, rc] = run_to_end(std::string(RATH_BINARY_DIR) + "/bin/01_hello_agent");
    CHECK(rc == 0);
    CHECK(out.find("(no API key: using the fake LLM server at http://127.0.0.1:") != std::string::npos);
}

}  // TEST_SUITE
