// The pure half of MCP authorization: challenges, discovery URLs, metadata documents,
// PKCE and form bodies, without sockets.
#include "lib/mcp/http/oauth_wire.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

using namespace rath::mcp::oauth;
using namespace rath::mcp::oauth::detail;

TEST_SUITE("mcp oauth wire") {

TEST_CASE("a Bearer challenge yields resource_metadata, scope and error, quoted or not") {
    auto c = parse_bearer_challenge(
        R"(Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error=insufficient_scope, error_description="need \"write\"")");
    REQUIRE(c);
    CHECK(c->resource_metadata == "https://mcp.example.com/.well-known/oauth-protected-resource");
    CHECK(c->scope == "files:read files:write");
    CHECK(c->error == "insufficient_scope");
    CHECK(c->error_description == "need \"write\"");
}

TEST_CASE("the Bearer challenge is found among other schemes and parameter names ignore case") {
    auto c = parse_bearer_challenge(R"(Basic realm="x", bEARER Scope="a", realm="mcp", DPoP algs="ES256")");
    REQUIRE(c);
    CHECK(c->scope == "a");
    CHECK_FALSE(c->resource_metadata);
    CHECK_FALSE(parse_bearer_challenge(R"(Basic realm="x")"));
    CHECK_FALSE(parse_bearer_challenge(""));
    CHECK(parse_bearer_challenge("Bearer"));  // a bare scheme is a challenge without parameters
}

TEST_CASE("an unterminated quoted string keeps the parameters read before it") {
    auto c = parse_bearer_challenge(R"(Bearer scope="a b", resource_metadata="https://x)");
    REQUIRE(c);
    CHECK(c->scope == "a b");
    CHECK_FALSE(c->resource_metadata);
}

TEST_CASE("protected resource metadata is looked up path-inserted first, then at the root") {
    CHECK(protected_resource_metadata_urls("https://example.com/public/mcp") ==
          std::vector<std::string>{"https://example.com/.well-known/oauth-protected-resource/public/mcp",
                                   "https://example.com/.well-known/oauth-protected-resource"});
    CHECK(protected_resource_metadata_urls("http://127.0.0.1:8080/?x=1") ==
          std::vector<std::string>{"http://127.0.0.1:8080/.well-known/oauth-protected-resource"});
}

TEST_CASE("authorization server metadata follows the spec's order for issuers with and without a path") {
    CHECK(authorization_server_metadata_urls("https://auth.example.com/tenant1") ==
          std::vector<std::string>{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                                   "https://auth.example.com/.well-known/openid-configuration/tenant1",
                                   "https://auth.example.com/tenant1/.well-known/openid-configuration"});
    CHECK(authorization_server_metadata_urls("https://auth.example.com/") ==
          std::vector<std::string>{"https://auth.example.com/.well-known/oauth-authorization-server",
                                   "https://auth.example.com/.well-known/openid-configuration"});
}

TEST_CASE("the canonical resource lower-cases scheme and host and drops the default port, query, fragment and "
          "trailing slash") {
    CHECK(canonical_resource("HTTPS://MCP.Example.com:443/Server/mcp/?q=1#frag") == "https://mcp.example.com/Server/mcp");
    CHECK(canonical_resource("http://localhost:3000/") == "http://localhost:3000");
    CHECK_THROWS_AS((void)canonical_resource("mcp.example.com"), OAuthError);
    CHECK_THROWS_AS((void)canonical_resource("ftp://x/y"), OAuthError);
}

TEST_CASE("a metadata resource covers the server when it is the same origin and a path prefix on a segment") {
    CHECK(resource_covers("https://h/mcp", "https://h/mcp"));
    CHECK(resource_covers("https://h", "https://h/mcp"));
    CHECK(resource_covers("https://h/a", "https://h/a/mcp"));
    CHECK_FALSE(resource_covers("https://h/a", "https://h/ab/mcp"));
    CHECK_FALSE(resource_covers("https://other/mcp", "https://h/mcp"));
    CHECK_FALSE(resource_covers("http://h/mcp", "https://h/mcp"));
    CHECK_FALSE(resource_covers("not a url", "https://h/mcp"));
}

TEST_CASE("protected resource metadata needs a resource and at least one authorization server") {
    auto m = parse_protected_resource_metadata(
        R"({"resource":"https://h/mcp","authorization_servers":["https://as"],"scopes_supported":["a","b"],"extra":1})");
    CHECK(m.resource == "https://h/mcp");
    CHECK(m.authorization_servers == std::vector<std::string>{"https://as"});
    REQUIRE(m.scopes_supported);
    CHECK(m.scopes_supported->size() == 2);
    CHECK_THROWS_WITH_AS((void)parse_protected_resource_metadata(R"({"resource":"https://h"})"),
                         doctest::Contains("authorization_servers"), OAuthError);
    CHECK_THROWS_AS((void)parse_protected_resource_metadata("[1]"), OAuthError);
    CHECK_THROWS_AS((void)parse_protected_resource_metadata("{"), OAuthError);
    CHECK_THROWS_AS((void)parse_protected_resource_metadata(R"({"resource":1,"authorization_servers":["x"]})"),
                    OAuthError);
}

TEST_CASE("authorization server metadata keeps absent lists absent") {
    auto m = parse_authorization_server_metadata(
        R"({"issuer":"https://as","authorization_endpoint":"https://as/authorize","token_endpoint":"https://as/token",
            "code_challenge_methods_supported":["S256"],"client_id_metadata_document_supported":true})");
    CHECK(m.token_endpoint == "https://as/token");
    CHECK(m.registration_endpoint.empty());
    CHECK(m.client_id_metadata_document_supported);
    REQUIRE(m.code_challenge_methods_supported);
    CHECK_FALSE(m.token_endpoint_auth_methods_supported);
    CHECK_FALSE(m.scopes_supported);
    CHECK_THROWS_WITH_AS((void)parse_authorization_server_metadata(R"({"issuer":"x"})"),
                         doctest::Contains("token_endpoint"), OAuthError);
}

TEST_CASE("a token response sets expires_at from expires_in and an error response throws its code") {
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'000'000));
    auto t = parse_token_response(
        R"({"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"})", now);
    CHECK(t.access_token == "at");
    CHECK(t.refresh_token == "rt");
    CHECK(t.scope == "a b");
    REQUIRE(t.expires_at);
    CHECK(*t.expires_at - now == std::chrono::seconds(3600));
    auto neg = parse_token_response(R"({"access_token":"at","expires_in":-5})", now);
    CHECK(*neg.expires_at == now);
    CHECK_FALSE(parse_token_response(R"({"access_token":"at"})", now).expires_at);
    try {
        (void)parse_token_response(R"({"error":"invalid_grant","error_description":"code used"})", now);
        FAIL("no throw");
    } catch (const OAuthError& e) {
        CHECK(e.oauth_error() == "invalid_grant");
        CHECK(std::string(e.what()).find("code used") != std::string::npos);
    }
}

TEST_CASE("PKCE S256 matches RFC 7636 appendix B and fresh verifiers are 43 unreserved characters") {
    CHECK(s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    auto a = make_pkce();
    auto b = make_pkce();
    CHECK(a.verifier.size() == 43);
    CHECK(a.verifier != b.verifier);
    CHECK(a.challenge == s256_challenge(a.verifier));
    for (char c : a.verifier) CHECK((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'));
}

TEST_CASE("form encoding escapes reserved bytes and query parsing undoes it") {
    const FormFields f{{"redirect_uri", "http://localhost:3000/cb?x=1"}, {"scope", "a b"}, {"k", "ü&="}};
    const std::string enc = form_encode(f);
    CHECK(enc == "redirect_uri=http%3A%2F%2Flocalhost%3A3000%2Fcb%3Fx%3D1&scope=a+b&k=%C3%BC%26%3D");
    CHECK(query_params("https://x/cb?" + enc + "#frag") == f);
    CHECK(query_params("http://localhost:3000/callback?code=abc&state=s%2B1") ==
          FormFields{{"code", "abc"}, {"state", "s+1"}});
    CHECK(with_query("https://as/authorize?tenant=1", {{"a", "b"}}) == "https://as/authorize?tenant=1&a=b");
    CHECK(with_query("https://as/authorize", {{"a", "b c"}}) == "https://as/authorize?a=b+c");
}

TEST_CASE("scope selection prefers the challenge, then scopes_supported, else omits the scope") {
    ProtectedResourceMetadata prm{.resource = "https://h", .authorization_servers = {"https://as"},
                                  .scopes_supported = std::vector<std::string>{"mcp:basic", "mcp:read"}};
    CHECK(select_scope(std::string("files:read"), &prm) == "files:read");
    CHECK(select_scope(std::nullopt, &prm) == "mcp:basic mcp:read");
    CHECK(select_scope(std::string("  "), &prm) == "mcp:basic mcp:read");
    prm.scopes_supported.reset();
    CHECK_FALSE(select_scope(std::nullopt, &prm));
    CHECK_FALSE(select_scope(std::nullopt, nullptr));
    CHECK(scope_union("mcp:basic", "mcp:basic mcp:write") == "mcp:basic mcp:write");
    CHECK(scope_union("", "a") == "a");
}

TEST_CASE("client authentication and registration bodies follow RFC 6749 and RFC 7591") {
    // RFC 6749 §2.3.1: id and secret are form-encoded before base64.
    CHECK(basic_authorization("id:1", "s p") == "Basic aWQlM0ExOnMrcA==");
    OAuthOptions o;
    o.client_name = "rath test";
    o.redirect_uri = "http://localhost:3000/callback";
    auto body = boost::json::parse(registration_body(o, "none", std::string("a b"))).as_object();
    CHECK(body.at("client_name") == "rath test");
    CHECK(body.at("redirect_uris").as_array().at(0) == "http://localhost:3000/callback");
    CHECK(body.at("token_endpoint_auth_method") == "none");
    CHECK(body.at("scope") == "a b");
    auto plain = boost::json::parse(registration_body(o, "", std::nullopt)).as_object();
    CHECK_FALSE(plain.contains("token_endpoint_auth_method"));
    CHECK_FALSE(plain.contains("scope"));
    auto reg = parse_registration_response(R"({"client_id":"c1","client_secret":"s1","token_endpoint_auth_method":"client_secret_post"})");
    CHECK(reg.client_id == "c1");
    CHECK(reg.client_secret == "s1");
    CHECK(reg.token_endpoint_auth_method == "client_secret_post");
}

}  // TEST_SUITE
