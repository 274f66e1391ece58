#pragma once
// Private: the pure half of MCP authorization (2025-11-25 basic/authorization): parsing
// challenges and metadata documents, building discovery and authorization URLs, PKCE,
// form bodies. No sockets; OAuthProvider (lib/mcp/http/oauth_provider.cpp) performs the
// exchanges with these pieces.
#include <rath/mcp/oauth.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::mcp::oauth::detail {

// One `Bearer` challenge of a WWW-Authenticate field (RFC 7235 §4.1, RFC 6750 §3,
// RFC 9728 §5.1). Parameter names are matched case-insensitively.
struct BearerChallenge {
    std::optional<std::string> resource_metadata;
    std::optional<std::string> scope;
    std::optional<std::string> error;
    std::optional<std::string> error_description;
};

// The Bearer challenge among the challenges of one field value, or nullopt when there
// is none (another scheme only, or text that is not a challenge list). Quoted strings
// are unescaped; a malformed tail ends parsing with what was read so far.
[[nodiscard]] std::optional<BearerChallenge> parse_bearer_challenge(std::string_view field);

// Scheme and authority with the path split off: "https://h:8443/a/b?q#f" ->
// {"https://h:8443", "/a/b"}. Scheme and host lower-cased, default ports dropped,
// query and fragment removed. Throws OAuthError for anything but an absolute http(s) URL.
struct SplitUrl {
    std::string origin;
    std::string path;  // "" for no path or "/"
};
[[nodiscard]] SplitUrl split_url(std::string_view url);

// RFC 8707 §2 / 2025-11-25 "Canonical Server URI": origin + path, no query, no fragment,
// no trailing slash.
[[nodiscard]] std::string canonical_resource(std::string_view server_url);

// RFC 9728 §3.1 and 2025-11-25 "Protected Resource Metadata Discovery Requirements":
// the path-inserted well-known URI first (when the endpoint has a path), then the root.
[[nodiscard]] std::vector<std::string> protected_resource_metadata_urls(std::string_view server_url);

// 2025-11-25 "Authorization Server Metadata Discovery": for an issuer with a path,
// RFC 8414 path insertion, OIDC path insertion, OIDC path appending; without a path,
// RFC 8414 then OIDC.
[[nodiscard]] std::vector<std::string> authorization_server_metadata_urls(std::string_view issuer);

// RFC 9728 §7.3-style check that the metadata's `resource` names this server: same
// origin and its path a prefix (on a segment boundary) of the server's path.
[[nodiscard]] bool resource_covers(std::string_view resource, std::string_view server_url);

// Metadata documents. Throw OAuthError naming the document and the field for JSON that
// is not an object or lacks a required member.
[[nodiscard]] ProtectedResourceMetadata parse_protected_resource_metadata(std::string_view json);
[[nodiscard]] AuthorizationServerMetadata parse_authorization_server_metadata(std::string_view json);

struct ClientRegistration {
    std::string client_id;
    std::string client_secret;               // empty for a public client
    std::string token_endpoint_auth_method;  // empty when the server did not say
};
[[nodiscard]] ClientRegistration parse_registration_response(std::string_view json);

// A token endpoint answer (RFC 6749 §5.1); `now` stamps expires_at from expires_in.
// An error answer (§5.2) throws OAuthError with its error code and description.
[[nodiscard]] Tokens parse_token_response(std::string_view json, std::chrono::system_clock::time_point now);

// RFC 7636 §4.1-4.2: a 43-character verifier from 32 random bytes and its S256 challenge.
struct Pkce {
    std::string verifier;
    std::string challenge;
};
[[nodiscard]] Pkce make_pkce();
[[nodiscard]] std::string s256_challenge(std::string_view verifier);
// base64url without padding of `n` random bytes (state values).
[[nodiscard]] std::string random_token(std::size_t n);
[[nodiscard]] std::string base64url(std::string_view bytes);

// application/x-www-form-urlencoded (WHATWG URL §5.2): unreserved bytes as is, space as
// '+', everything else %XX.
using FormFields = std::vector<std::pair<std::string, std::string>>;
[[nodiscard]] std::string form_encode(const FormFields& fields);
[[nodiscard]] std::string form_escape(std::string_view s);
// The decoded query parameters of an absolute or relative URL ('+' is a space).
[[nodiscard]] FormFields query_params(std::string_view url);

// The authorization endpoint URL with `fields` appended to any query it already has.
[[nodiscard]] std::string with_query(std::string_view endpoint, const FormFields& fields);

// 2025-11-25 "Scope Selection Strategy": the challenge's scope when given, else every
// scope of scopes_supported, else nullopt (omit the parameter).
[[nodiscard]] std::optional<std::string> select_scope(const std::optional<std::string>& challenge_scope,
                                                      const ProtectedResourceMetadata* prm);
// The union of two space-separated scope lists, `a`'s order first (step-up keeps what
// was granted).
[[nodiscard]] std::string scope_union(std::string_view a, std::string_view b);

// The registration body of RFC 7591 §2 for this client.
[[nodiscard]] std::string registration_body(const OAuthOptions& options, std::string_view auth_method,
                                            const std::optional<std::string>& scope);

// RFC 6749 §2.3.1: "Basic base64(urlencode(id):urlencode(secret))".
[[nodiscard]] std::string basic_authorization(std::string_view client_id, std::string_view client_secret);

}  // namespace rath::mcp::oauth::detail
