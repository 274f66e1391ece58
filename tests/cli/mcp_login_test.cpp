// rath mcp login: the OAuth 2.1 sign-in of a config url entry, run as a child process
// against the loopback MCP server of the mcp suite that is also its own authorization
// server (tests/mcp/http_test_server.hpp). The test plays the browser: it opens the URL
// the command prints and follows the authorization server's redirect to the command's
// loopback listener.
#include "cli/cli_support.hpp"
#include "mcp/http_test_server.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/net/http_client.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
namespace json = boost::json;
using rath::test::McpHttpTestServer;

namespace {

std::shared_ptr<rath::config::ConfigStore> write_config(const fs::path& dir, const std::string& url, json::value oauth) {
    json::object doc{{"version", 1}, {"mcpServers", {{"remote", {{"url", url}, {"oauth", std::move(oauth)}}}}}};
    const auto path = dir / "config.json";
    std::ofstream(path) << json::serialize(doc);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    return std::make_shared<rath::config::ConfigStore>(path);
}

// The lines the child wrote so far, read until one contains `marker` (or the pipe ends).
std::string read_until(int fd, const std::string& marker, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[512];
    while (out.find(marker) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

std::string read_rest(int fd) {
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
}

std::vector<fs::path> token_files(const fs::path& dir) {
    std::vector<fs::path> out;
    if (fs::exists(dir))
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_regular_file()) out.push_back(e.path());
    return out;
}

}  // namespace

TEST_SUITE("cli/mcp_login") {

TEST_CASE("rath mcp login takes the browser's redirect on a loopback port, keeps the tokens 0600 beside the config, and config connections use them") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true});
    rath::test::TempDir dir;
    auto store = write_config(dir.path(), server.url(), json::object{{"redirect_uri", "http://127.0.0.1:0/callback"}});

    // Before signing in: nobody is at a browser, so the connection fails naming the command.
    // (The client reports it as the answer to its first request after initialize.)
    CHECK_THROWS_WITH((void)rath::mcp::mcp_tools_from_config("remote", store),
                      doctest::Contains("MCP server 'remote' needs authorization: run `rath mcp login remote`"));
    CHECK(server.requests("GET", "/authorize").empty());

    auto child = rath::test::spawn_with_stdout_pipe(
        rath::test::bin_path("rath"), {"--config", store->path().string(), "mcp", "login", "remote", "--timeout", "60"},
        rath::test::SpawnOptions{.die_with_parent = true, .netns = {}});
    const std::string prompt = read_until(child.out_fd, "/authorize?");
    const auto at = prompt.find("http://");
    REQUIRE(at != std::string::npos);
    const std::string url = prompt.substr(at, prompt.find('\n', at) - at);
    CHECK(url.find("/authorize?") != std::string::npos);

    // The browser: the authorization server approves at once and redirects to the command.
    auto& rt = rath::async::Runtime::default_runtime();
    rath::net::HttpClient http(rt);
    rath::net::HttpResponse approve = http.request({.method = "GET", .url = url});
    REQUIRE(approve.status == 302);
    const std::string location(approve.header("Location").value_or(""));
    CHECK(location.rfind("http://127.0.0.1:", 0) == 0);
    rath::net::HttpResponse landed = http.request({.method = "GET", .url = location});
    CHECK(landed.status == 200);
    CHECK(landed.body.find("you can close this page") != std::string::npos);

    const std::string rest = read_rest(child.out_fd);
    CHECK(rath::test::wait_exit_code(child.pid) == 0);
    ::close(child.out_fd);
    CHECK(rest.find("signed in to MCP server 'remote'; tokens in " + (dir.path() / "mcp-oauth").string()) !=
          std::string::npos);
    const auto files = token_files(dir.path() / "mcp-oauth");
    REQUIRE(files.size() == 1);
    struct stat st {};
    REQUIRE(::stat(files.front().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    // After: a connection made from the config uses the stored token, with no new flow.
    const auto tools = rath::mcp::mcp_tools_from_config("remote", store);
    CHECK_FALSE(tools.empty());
    CHECK(server.requests("GET", "/authorize").size() == 1);
    CHECK(server.requests("POST", "/token").size() == 1);
}

TEST_CASE("a client_credentials entry signs in without a browser; a malformed oauth key is refused naming it") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true});
    rath::test::TempDir dir;
    auto store = write_config(dir.path(), server.url(),
                              json::object{{"grant", "client_credentials"}, {"client_id", "svc"}, {"client_secret", "s3"}});
    // A connection from the config runs the grant itself.
    CHECK_FALSE(rath::mcp::mcp_tools_from_config("remote", store).empty());
    const auto tokens = server.requests("POST", "/token");
    REQUIRE(tokens.size() == 1);
    CHECK(tokens.front().body.find("grant_type=client_credentials") != std::string::npos);
    CHECK(server.requests("GET", "/authorize").empty());
    // The command does the same and reports where the tokens are.
    const auto r = rath::test::rath_cli({"--config", store->path().string(), "--json", "mcp", "login", "remote"});
    CHECK(r.exit_code == 0);
    const json::value report = json::parse(r.out);
    CHECK(report.at("server") == "remote");
    CHECK(std::string(report.at("token_dir").as_string()) == (dir.path() / "mcp-oauth").string());
    CHECK(token_files(dir.path() / "mcp-oauth").size() == 1);

    for (const auto& [oauth, message] : std::vector<std::pair<json::value, std::string>>{
             {json::object{{"grant", "device"}}, "mcpServers.remote.oauth.grant: must be \"authorization_code\" or \"client_credentials\""},
             {json::object{{"grant", "client_credentials"}}, "mcpServers.remote.oauth.client_id: is required for the client_credentials grant"},
             {json::object{{"scopes", "a"}}, "mcpServers.remote.oauth.scopes: is not an oauth setting"},
             {json::value("yes"), "mcpServers.remote.oauth: must be true or an object"}}) {
        auto bad = write_config(dir.path(), server.url(), oauth);
        CHECK_THROWS_WITH_AS((void)rath::mcp::mcp_oauth_config("remote", bad), doctest::Contains(message.c_str()),
                             rath::config::ConfigError);
        const auto cli = rath::test::rath_cli({"--config", bad->path().string(), "mcp", "login", "remote"});
        CHECK(cli.exit_code == 1);
        CHECK(cli.err.find(message) != std::string::npos);
    }
}

TEST_CASE("rath mcp login refuses an entry without oauth and a redirect URI it cannot receive") {
    rath::test::TempDir dir;
    auto store = write_config(dir.path(), "http://127.0.0.1:9/mcp", json::object{{"redirect_uri", "https://example.com/cb"}});
    auto r = rath::test::rath_cli({"--config", store->path().string(), "mcp", "login", "remote"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("redirect_uri 'https://example.com/cb' is not an http:// URL on this machine's loopback address") !=
          std::string::npos);
    store = write_config(dir.path(), "http://127.0.0.1:9/mcp", json::value(false));
    r = rath::test::rath_cli({"--config", store->path().string(), "mcp", "login", "remote"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("has no \"oauth\" key in a url entry") != std::string::npos);
}

}  // TEST_SUITE
