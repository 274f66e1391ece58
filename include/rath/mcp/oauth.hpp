#pragma once
// OAuth 2.1 authorization for remote MCP servers, as the 2025-11-25 revision's
// basic/authorization specifies: a 401 (or a 403 insufficient_scope) from the server
// starts discovery of the protected-resource metadata (RFC 9728: the WWW-Authenticate
// resource_metadata URL, else the path-inserted then the root well-known URI), then of
// the authorization server's metadata (RFC 8414 and OpenID Connect discovery, in the
// spec's order), a client identity (pre-registered, a client-id metadata document URL
// when the server supports it, else dynamic registration per RFC 7591), and tokens
// through the authorization code grant with PKCE S256 (the user's RedirectHandler shows
// the authorization URL and returns where the browser was sent back to) or the
// client credentials grant. Every authorization and token request carries the RFC 8707
// `resource` of the server. Tokens are refreshed before they expire and kept, with the
// registered client, in the rath config directory with mode 0600.
//
// Token files are read and written on the default Runtime's blocking pool, never on an
// io thread.
//
// Thread safety: an OAuthProvider may be used from any thread and by many requests at
// once; authorization flows run one at a time, and a request that failed with a token
// another flow has since replaced just retries with the new one.
// Cancellation: the async operations honour the awaiting coroutine's cancellation
// (what HttpClient honours); a cancelled flow leaves the stored tokens as they were.
// Errors: OAuthError for every authorization failure (its message names the step and,
// for a server's OAuth error answer, its error code); HttpError from the transport.
#include <rath/error.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::mcp::oauth {

class OAuthError : public Error {
public:
    // `oauth_error`: the `error` code of an OAuth error answer ("invalid_grant", ...),
    // empty when the failure is not one; `status`: the HTTP status involved, or 0.
    OAuthError(const std::string& what, std::string oauth_error = {}, int status = 0)
        : Error(what), oauth_error_(std::move(oauth_error)), status_(status) {}
    [[nodiscard]] const std::string& oauth_error() const noexcept { return oauth_error_; }
    [[nodiscard]] int status() const noexcept { return status_; }

private:
    std::string oauth_error_;
    int status_;
};

// RFC 9728 §2 (the members rath uses).
struct ProtectedResourceMetadata {
    std::string resource;
    std::vector<std::string> authorization_servers;
    std::optional<std::vector<std::string>> scopes_supported;
};

// RFC 8414 §2 / OpenID Connect Discovery (the members rath uses). Absent lists are
// nullopt, which RFC 8414 gives meaning to (no code_challenge_methods_supported = no PKCE).
struct AuthorizationServerMetadata {
    std::string issuer;
    std::string authorization_endpoint;
    std::string token_endpoint;
    std::string registration_endpoint;  // empty: no dynamic registration
    std::optional<std::vector<std::string>> code_challenge_methods_supported;
    std::optional<std::vector<std::string>> token_endpoint_auth_methods_supported;
    std::optional<std::vector<std::string>> grant_types_supported;
    std::optional<std::vector<std::string>> scopes_supported;
    bool client_id_metadata_document_supported = false;
};

struct Tokens {
    std::string access_token;
    std::string token_type = "Bearer";
    std::string refresh_token;  // empty when none was issued
    std::string scope;          // granted scope as the server stated it (may be empty)
    std::optional<std::chrono::system_clock::time_point> expires_at;
};

// The client identity used at the authorization server.
struct ClientIdentity {
    std::string client_id;
    std::string client_secret;               // empty for a public client
    std::string token_endpoint_auth_method;  // none, client_secret_basic, client_secret_post; empty = choose
};

enum class Grant { authorization_code, client_credentials };

// Shows `authorization_url` to the user (a browser, a printed link) and returns the URL
// the authorization server redirected back to (the redirect_uri with `code` and
// `state`). Throwing aborts the flow with that exception.
using RedirectHandler = std::function<boost::asio::awaitable<std::string>(std::string authorization_url)>;

struct OAuthOptions {
    Grant grant = Grant::authorization_code;
    // Client metadata for registration and client-id metadata documents.
    std::string client_name = "rath";
    std::string redirect_uri = "http://127.0.0.1:33418/callback";
    // A pre-registered client (2025-11-25 "Preregistration"); takes precedence over
    // client-id metadata documents and dynamic registration. Required for
    // client_credentials.
    std::optional<ClientIdentity> client{};
    // An https URL whose document describes this client; used as the client_id when the
    // authorization server advertises client_id_metadata_document_supported.
    std::string client_metadata_url{};
    // Overrides the scope selection strategy (challenge scope, then scopes_supported).
    std::optional<std::string> scope{};
    // Required for authorization_code.
    RedirectHandler redirect_handler{};
    // Authorization flows one HTTP request may trigger (initial and step-up) before the
    // request fails with OAuthError: the spec's "no more than a few times".
    int max_authorizations = 3;
    // Where tokens and the registered client are kept; nullopt = the config directory's
    // "mcp-oauth" folder (rath/config/paths.hpp); an empty path = memory only.
    std::optional<std::filesystem::path> token_dir{};
    // A token whose expiry is this close is refreshed before use.
    std::chrono::seconds refresh_margin{30};
};

// What the provider keeps per server, as stored on disk.
struct StoredAuthorization {
    std::string resource;      // canonical server URI (RFC 8707)
    std::string issuer;        // the authorization server that issued the tokens
    std::string token_endpoint;
    ClientIdentity client{};
    std::optional<Tokens> tokens{};
};

// One file per server (named by a hash of the canonical resource) holding JSON, written
// atomically with mode 0600 in a directory of mode 0700. Blocking file I/O: callers
// on a runtime thread run these on the blocking pool (OAuthProvider does).
class TokenStore {
public:
    explicit TokenStore(std::filesystem::path dir);
    // nullopt when nothing usable is stored (a missing file, or one that does not parse,
    // which is logged and ignored).
    [[nodiscard]] std::optional<StoredAuthorization> load(std::string_view resource) const;
    // Throws OAuthError when the file cannot be written.
    void save(const StoredAuthorization& entry) const;
    void erase(std::string_view resource) const;
    [[nodiscard]] std::filesystem::path file_for(std::string_view resource) const;
    [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }

private:
    std::filesystem::path dir_;
};

class OAuthProvider {
public:
    // `server_url`: the MCP endpoint. Throws OAuthError for a URL that is not absolute
    // http(s), or authorization_code without a redirect handler, or client_credentials
    // without a client.
    OAuthProvider(net::HttpClient http, std::string server_url, OAuthOptions options = {});
    ~OAuthProvider();
    OAuthProvider(const OAuthProvider&) = delete;
    OAuthProvider& operator=(const OAuthProvider&) = delete;

    // The Authorization field value for the next request ("Bearer <token>"), refreshing
    // a token that is about to expire first; nullopt while no token is held. Loads the
    // stored tokens on first use.
    [[nodiscard]] boost::asio::awaitable<std::optional<std::string>> async_authorization();

    // A request sent with `sent_authorization` (nullopt: none) got `status` (401, or 403
    // with error="insufficient_scope") and this WWW-Authenticate field. Obtains a token
    // that should satisfy the challenge (a refresh, or a full flow with the challenge's
    // scope plus what was granted before); returns at once when another request
    // already replaced the token that failed. `attempt` counts the flows this request
    // already triggered: at options().max_authorizations it throws OAuthError instead.
    [[nodiscard]] boost::asio::awaitable<void> async_handle_challenge(int status,
                                                                     std::optional<std::string> www_authenticate,
                                                                     std::optional<std::string> sent_authorization,
                                                                     int attempt);

    // Obtains a token without a challenge (client_credentials, or a user flow started
    // ahead of the first request); discovery uses the well-known URIs.
    [[nodiscard]] boost::asio::awaitable<void> async_authorize();

    // Forgets the tokens (memory and store); the registered client is kept.
    [[nodiscard]] boost::asio::awaitable<void> async_sign_out();

    [[nodiscard]] const OAuthOptions& options() const noexcept;
    [[nodiscard]] const std::string& server_url() const noexcept;
    // Snapshot for tests and tools.
    [[nodiscard]] std::optional<Tokens> tokens() const;
    // Flows run so far (authorization code or client credentials, not refreshes).
    [[nodiscard]] std::size_t authorizations() const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

// A RedirectHandler for programs without a user: requests the authorization URL and
// returns the Location of its redirect (an authorization server that approves at once,
// as test servers and the conformance suite do). Throws OAuthError when the answer is
// not a redirect.
[[nodiscard]] RedirectHandler headless_redirect_handler(net::HttpClient http);

}  // namespace rath::mcp::oauth
