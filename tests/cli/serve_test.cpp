// rath fake-llm | mcp serve | sandbox serve: the project's servers run as subcommands of
// the one binary, each spoken to over its real protocol on loopback.
#include "cli/cli_support.hpp"
#include "support/sandbox_server.hpp"

#include <rath/llm/chat_client.hpp>
#include <rath/llm/message.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/request.hpp>
#include <rath/net/http_client.hpp>

#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

using rath::test::bin_path;
using rath::test::contains;
using rath::test::rath_cli;

namespace {

// A server started as `rath <words...> <flags...>`, stopped with SIGTERM at scope exit.
struct ServedChild {
    rath::test::SpawnedChild child;
    std::string url;
    explicit ServedChild(std::vector<std::string> args) : child(rath::test::spawn_with_stdout_pipe(bin_path("rath"), std::move(args))) {
        try {
            url = rath::test::read_listening_url(child.out_fd);
        } catch (...) {
            stop();
            throw;
        }
    }
    // The exit code after SIGTERM.
    int stop() {
        if (child.pid <= 0) return -1;
        ::kill(child.pid, SIGTERM);
        const int rc = rath::test::wait_exit_code(child.pid);
        ::close(child.out_fd);
        child.pid = -1;
        return rc;
    }
    ~ServedChild() { stop(); }
};

rath::net::HttpClient plain_client() {
    return rath::net::HttpClient(rath::net::HttpClientOptions{.proxy = std::string(), .no_proxy = std::string()});
}

}  // namespace

TEST_SUITE("cli/serve") {

TEST_CASE("rath fake-llm answers chat completions on the OpenAI wire format and exits 0 on SIGTERM") {
    ServedChild server({"fake-llm", "--port", "0", "--quiet", "--echo"});
    rath::llm::Provider provider;
    provider.provider_kind = "openai";
    provider.base_url = server.url + "/v1";
    provider.api_key = "sk-fake";
    provider.model = "fake-model";
    auto client = rath::llm::chat_client_for(provider);
    rath::llm::ChatRequest request;
    request.messages.push_back(rath::llm::Message::user("hello from the cli suite"));
    auto response = client->complete(request);
    CHECK(contains(response.primary_choice().message.content.value_or(""), "hello from the cli suite"));
    CHECK(server.stop() == 0);
}

TEST_CASE("rath mcp serve --http answers initialize with its server info over Streamable HTTP") {
    ServedChild server({"mcp", "serve", "--builtin-tools", "--http", "--port", "0", "--json-response"});
    rath::net::HttpRequest req;
    req.method = "POST";
    req.url = server.url;
    req.headers.push_back({"Content-Type", "application/json"});
    req.headers.push_back({"Accept", "application/json, text/event-stream"});
    req.body =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},)"
        R"("clientInfo":{"name":"cli-test","version":"1"}}})";
    auto res = plain_client().request(req);
    CHECK(res.status == 200);
    CHECK(contains(res.body, R"("serverInfo")"));
    CHECK(contains(res.body, R"("protocolVersion":"2025-06-18")"));
    CHECK(server.stop() == 0);
}

TEST_CASE("rath sandbox serve is the OpenSandbox server: its lifecycle API lists sandboxes behind the API key") {
    rath::test::SandboxServerProcess server({}, "cli-key", {bin_path("rath"), "sandbox", "serve"});
    server.start();
    auto client = plain_client();
    rath::net::HttpRequest req;
    req.method = "GET";
    req.url = server.url() + "/v1/sandboxes";
    CHECK(client.request(req).status == 401);
    req.headers.push_back({"OPEN-SANDBOX-API-KEY", "cli-key"});
    auto res = client.request(req);
    CHECK(res.status == 200);
    CHECK(contains(res.body, "items"));
}

TEST_CASE("a server command after rath's global flags is refused with a hint and exit code 2") {
    auto r = rath_cli({"--json", "fake-llm", "--port", "0"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "write it first: rath fake-llm"));
    auto bad = rath_cli({"mcp", "serve", "--no-such-flag"});
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "usage: rath mcp serve"));
    auto help = rath_cli({"--help"});
    CHECK(help.exit_code == 0);
    CHECK(contains(help.out, "fake-llm"));
    CHECK(contains(help.out, "sandbox"));
}

}  // TEST_SUITE
