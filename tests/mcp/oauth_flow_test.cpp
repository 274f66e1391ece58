// OAuthProvider with the Streamable HTTP transport against a loopback MCP server that
// is also its own authorization server (tests/mcp/http_test_server.hpp): discovery,
// registration, PKCE, the token exchange, storage, step-up, retry limit, refresh.
#include "http_test_server.hpp"
#include "support/temp_dir.hpp"

#include "lib/mcp/http/oauth_wire.hpp"

#include <rath/async.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/net/http_client.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace asio = boost::asio;
using namespace rath::mcp;
using rath::test::McpHttpTestServer;
using namespace std::chrono_literals;

namespace {

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2});
    return rt;
}

template <class T>
T run(asio::awaitable<T> op) {
    return rath::async::block_on(runtime(), std::move(op));
}

oauth::OAuthOptions options_for(const std::filesystem::path& dir) {
    oauth::OAuthOptions o;
    o.client_name = "rath test";
    o.redirect_uri = "http://127.0.0.1:1/callback";
    o.redirect_handler = oauth::headless_redirect_handler(rath::net::HttpClient(runtime()));
    o.token_dir = dir;
    return o;
}

std::unique_ptr<Client> client_for(const std::string& url, std::shared_ptr<oauth::OAuthProvider> auth) {
    StreamableHttpClientOptions o;
    o.url = url;
    o.auth = std::move(auth);
    o.open_get_stream = false;
    ClientOptions co;
    co.request_timeout = 10s;
    return std::make_unique<Client>(std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(runtime()), o),
                                    std::move(co));
}

std::string text_of(const CallToolResult& r) { return r.content.empty() ? "" : r.content.front().text.value_or(""); }

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_SUITE("mcp oauth flow") {

TEST_CASE("a 401 runs discovery, registration, PKCE authorization and the token exchange; the token goes on every "
          "request and into a 0600 file") {
    rath::test::TempDir dir;
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .challenge_scope = "mcp:basic"});
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(dir.path()));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    CHECK(run(c->async_list_tools()).size() == 2);
    CHECK(text_of(run(c->async_call_tool("echo", {}))) == "echo:{}");
    run(c->async_close());

    CHECK(auth->authorizations() == 1);
    CHECK(server.requests("GET", "/.well-known/oauth-protected-resource/mcp").size() == 1);
    CHECK(server.requests("GET", "/.well-known/oauth-authorization-server").size() == 1);
    auto reg = server.requests("POST", "/register");
    REQUIRE(reg.size() == 1);
    CHECK(reg[0].body.find(R"("redirect_uris":["http://127.0.0.1:1/callback"])") != std::string::npos);
    auto authz = server.requests("GET", "/authorize");
    REQUIRE(authz.size() == 1);
    const auto q = oauth::detail::query_params("?" + authz[0].query);
    auto param = [&](const std::string& k) {
        for (auto& [n, v] : q)
            if (n == k) return v;
        return std::string("<absent>");
    };
    CHECK(param("client_id") == "client-1");
    CHECK(param("code_challenge_method") == "S256");
    CHECK(param("scope") == "mcp:basic");
    CHECK(param("resource") == server.url());
    auto tok = server.requests("POST", "/token");
    REQUIRE(tok.size() == 1);
    // client_secret_post (the only method the server offers), the verifier and the resource.
    CHECK(tok[0].body.find("client_secret=secret-1") != std::string::npos);
    const auto verifier_at = tok[0].body.find("code_verifier=");
    REQUIRE(verifier_at != std::string::npos);
    std::string verifier = tok[0].body.substr(verifier_at + 14);
    verifier = verifier.substr(0, verifier.find('&'));
    CHECK(oauth::detail::s256_challenge(verifier) == param("code_challenge"));
    CHECK(tok[0].body.find("resource=" + oauth::detail::form_escape(server.url())) != std::string::npos);

    for (const char* m : {"tools/list", "tools/call"}) {
        auto rs = server.rpc(m);
        REQUIRE_FALSE(rs.empty());
        CHECK(rs.back().header("authorization") == "Bearer tok-1");
    }

    oauth::TokenStore store(dir.path());
    const auto file = store.file_for(server.url());
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(slurp(file).find("tok-1") != std::string::npos);
    auto saved = store.load(server.url());
    REQUIRE(saved);
    REQUIRE(saved->tokens);
    CHECK(saved->tokens->access_token == "tok-1");
    CHECK(saved->client.client_id == "client-1");
}

TEST_CASE("a stored token is used by a new provider without another authorization") {
    rath::test::TempDir dir;
    McpHttpTestServer server({.get_stream = false, .require_auth = true});
    {
        auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                           options_for(dir.path()));
        auto c = client_for(server.url(), auth);
        (void)run(c->async_connect());
        (void)run(c->async_list_tools());
        run(c->async_close());
    }
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(dir.path()));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    (void)run(c->async_list_tools());
    run(c->async_close());
    CHECK(auth->authorizations() == 0);
    CHECK(server.requests("GET", "/authorize").size() == 1);
    CHECK(server.rpc("tools/list").back().header("authorization") == "Bearer tok-1");
}

TEST_CASE("a 403 insufficient_scope steps up with the granted scope plus the challenged one") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .challenge_scope = "mcp:basic",
                              .call_scope = "mcp:write"});
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(""));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    (void)run(c->async_list_tools());
    CHECK(text_of(run(c->async_call_tool("echo", {}))) == "echo:{}");
    run(c->async_close());
    auto authz = server.requests("GET", "/authorize");
    REQUIRE(authz.size() == 2);
    CHECK(authz[0].query.find("scope=mcp%3Abasic&") != std::string::npos);
    CHECK(authz[1].query.find("scope=mcp%3Abasic+mcp%3Awrite&") != std::string::npos);
    CHECK(server.rpc("tools/call").back().header("authorization") == "Bearer tok-2");
}

TEST_CASE("a server that keeps refusing the scope fails the call after three authorizations, and the session goes "
          "on") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .call_scope = "mcp:admin",
                              .always_403_for_calls = true});
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(""));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    try {
        (void)run(c->async_call_tool("echo", {}));
        FAIL("the call succeeded");
    } catch (const std::exception& e) {
        CHECK(std::string(e.what()).find("403 after 3 authorization attempts") != std::string::npos);
    }
    CHECK(server.requests("GET", "/authorize").size() == 3);
    CHECK(run(c->async_list_tools()).size() == 2);
    run(c->async_close());
}

TEST_CASE("an expired token is refreshed before the request, with the refresh token and the resource") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .token_expires_in = 0});
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(""));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    (void)run(c->async_list_tools());
    (void)run(c->async_call_tool("echo", {}));
    run(c->async_close());
    CHECK(auth->authorizations() == 1);
    auto tok = server.requests("POST", "/token");
    REQUIRE(tok.size() >= 2);
    CHECK(tok[1].body.find("grant_type=refresh_token") != std::string::npos);
    CHECK(tok[1].body.find("refresh_token=refresh-tok-1") != std::string::npos);
    CHECK(tok[1].body.find("resource=") != std::string::npos);
    // The call went out with a refreshed token, not the expired first one (the DELETE of
    // close refreshes once more).
    const auto sent = server.rpc("tools/call").back().header("authorization");
    CHECK(sent.rfind("Bearer tok-", 0) == 0);
    CHECK(sent != "Bearer tok-1");
}

TEST_CASE("an authorization server without PKCE S256 is refused before any authorization request") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .pkce = false});
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(),
                                                       options_for(""));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    CHECK_THROWS_WITH((void)run(c->async_list_tools()), doctest::Contains("PKCE"));
    CHECK(server.requests("GET", "/authorize").empty());
    run(c->async_close());
}

TEST_CASE("a client-id metadata document URL replaces registration when the server supports it") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true, .cimd = true});
    auto o = options_for("");
    o.client_metadata_url = "https://client.example/rath.json";
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(), std::move(o));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    (void)run(c->async_list_tools());
    run(c->async_close());
    CHECK(server.requests("POST", "/register").empty());
    REQUIRE(server.requests("GET", "/authorize").size() == 1);
    CHECK(server.requests("GET", "/authorize")[0].query.find("client_id=https%3A%2F%2Fclient.example%2Frath.json") !=
          std::string::npos);
}

TEST_CASE("a redirect whose state differs from the request is discarded") {
    McpHttpTestServer server({.get_stream = false, .require_auth = true});
    auto o = options_for("");
    auto inner = o.redirect_handler;
    o.redirect_handler = [inner](std::string url) -> asio::awaitable<std::string> {
        std::string back = co_await inner(std::move(url));
        co_return back.substr(0, back.find("&state=")) + "&state=forged";
    };
    auto auth = std::make_shared<oauth::OAuthProvider>(rath::net::HttpClient(runtime()), server.url(), std::move(o));
    auto c = client_for(server.url(), auth);
    (void)run(c->async_connect());
    CHECK_THROWS_WITH((void)run(c->async_list_tools()), doctest::Contains("state does not match"));
    CHECK(server.requests("POST", "/token").empty());
    run(c->async_close());
}

}  // TEST_SUITE
