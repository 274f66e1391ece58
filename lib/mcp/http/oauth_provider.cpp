// OAuthProvider: the exchanges of 2025-11-25 basic/authorization ("Authorization Flow
// Steps") over HttpClient, built from the pure pieces of oauth_wire.
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/paths.hpp>
#include <rath/log.hpp>
#include <rath/mcp/oauth.hpp>

#include "lib/mcp/http/oauth_wire.hpp"

#include <algorithm>
#include <mutex>

namespace rath::mcp::oauth {

namespace {

constexpr std::string_view channel = "rath.mcp.oauth";

bool contains(const std::optional<std::vector<std::string>>& list, std::string_view v) {
    return list && std::find(list->begin(), list->end(), v) != list->end();
}

bool is_2xx(int status) { return status >= 200 && status < 300; }

std::string body_excerpt(const std::string& body) {
    constexpr std::size_t cap = 200;
    std::string out;
    for (const char c : body.substr(0, cap)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    if (body.size() > cap) out += "...";
    return out;
}

}  // namespace

struct OAuthProvider::Impl {
    net::HttpClient http;
    std::string server_url;
    OAuthOptions options;
    async::Runtime* runtime;
    std::optional<TokenStore> store;

    mutable std::mutex mu;  // guards everything below
    bool loaded = false;
    std::string resource;  // RFC 8707 resource: the PRM's, else the canonical server URI
    std::optional<ProtectedResourceMetadata> prm;
    std::string prm_url;   // where prm came from
    std::optional<AuthorizationServerMetadata> as;
    std::string issuer;
    std::string token_endpoint;
    std::optional<ClientIdentity> client;
    std::optional<Tokens> tokens;
    std::string requested_scope;  // the scope of the last flow (step-up adds to it)
    std::optional<async::Lazy<void>> flight;  // a flow or refresh in progress
    std::size_t flows = 0;

    Impl(net::HttpClient h, std::string url, OAuthOptions o, async::Runtime& rt)
        : http(std::move(h)), server_url(std::move(url)), options(std::move(o)), runtime(&rt) {
        resource = detail::canonical_resource(server_url);  // validates the URL
        if (options.grant == Grant::authorization_code && !options.redirect_handler)
            throw OAuthError("OAuth authorization_code grant needs a redirect_handler");
        if (options.grant == Grant::client_credentials && !options.client)
            throw OAuthError("OAuth client_credentials grant needs a pre-registered client (options.client)");
        if (!options.token_dir)
            store.emplace(config::resolve_config_dir() / "mcp-oauth");
        else if (!options.token_dir->empty())
            store.emplace(*options.token_dir);
    }

    std::optional<std::string> header_locked() const {
        if (!tokens) return std::nullopt;
        // RFC 6750 §2.1 names the scheme "Bearer"; servers answer "bearer" too.
        return "Bearer " + tokens->access_token;
    }

    // ---- HTTP helpers -------------------------------------------------------------

    boost::asio::awaitable<net::HttpResponse> get(const std::string& url) {
        net::HttpRequest req;
        req.method = "GET";
        req.url = url;
        req.headers = {{"Accept", "application/json"}};
        net::HttpResponse resp;
        co_await http.async_request(req, resp);
        co_return resp;
    }

    boost::asio::awaitable<net::HttpResponse> post(const std::string& url, std::string content_type, std::string body,
                                                   std::optional<std::string> authorization = std::nullopt) {
        net::HttpRequest req;
        req.method = "POST";
        req.url = url;
        req.headers = {{"Content-Type", std::move(content_type)}, {"Accept", "application/json"}};
        if (authorization) req.headers.push_back({"Authorization", std::move(*authorization)});
        req.body = std::move(body);
        net::HttpResponse resp;
        co_await http.async_request(req, resp);
        co_return resp;
    }

    // ---- Store --------------------------------------------------------------------

    boost::asio::awaitable<void> ensure_loaded() {
        {
            std::lock_guard lk(mu);
            if (loaded || !store) {
                loaded = true;
                co_return;
            }
        }
        const TokenStore st = *store;
        const std::string key = resource;
        // A named job: GCC 12 destroys a lambda temporary inside a co_await twice.
        auto job = [st, key] { return st.load(key); };
        auto entry = co_await runtime->async_blocking(std::move(job));
        std::lock_guard lk(mu);
        if (loaded) co_return;
        loaded = true;
        if (!entry) co_return;
        issuer = entry->issuer;
        token_endpoint = entry->token_endpoint;
        if (!entry->client.client_id.empty() && !options.client) client = entry->client;
        if (!tokens) tokens = entry->tokens;
    }

    boost::asio::awaitable<void> persist() {
        if (!store) co_return;
        StoredAuthorization e;
        {
            std::lock_guard lk(mu);
            e.resource = detail::canonical_resource(server_url);
            e.issuer = issuer;
            e.token_endpoint = token_endpoint;
            if (client) e.client = *client;
            e.tokens = tokens;
        }
        const TokenStore st = *store;
        auto job = [st, e] {
            st.save(e);
            return true;
        };
        (void)co_await runtime->async_blocking(std::move(job));
    }

    // ---- Discovery ----------------------------------------------------------------

    // RFC 9728 via the challenge's resource_metadata, then the well-known URIs. Returns
    // false when the server publishes none (a 2025-03-26 server).
    boost::asio::awaitable<bool> discover_resource(const std::optional<std::string>& hinted) {
        std::vector<std::string> urls;
        if (hinted) urls.push_back(*hinted);
        for (auto& u : detail::protected_resource_metadata_urls(server_url))
            if (!hinted || u != *hinted) urls.push_back(std::move(u));
        {
            std::lock_guard lk(mu);
            if (prm && (!hinted || *hinted == prm_url)) co_return true;
        }
        for (const auto& url : urls) {
            auto resp = co_await get(url);
            if (!is_2xx(resp.status)) continue;
            auto doc = detail::parse_protected_resource_metadata(resp.body);
            if (!detail::resource_covers(doc.resource, server_url))
                throw OAuthError("protected resource metadata at " + url + " names resource '" + doc.resource +
                                 "', which is not this MCP server (" + server_url + ")");
            std::lock_guard lk(mu);
            resource = doc.resource;
            prm = std::move(doc);
            prm_url = url;
            co_return true;
        }
        co_return false;
    }

    boost::asio::awaitable<void> discover_authorization_server(bool have_prm) {
        std::string iss;
        {
            std::lock_guard lk(mu);
            iss = have_prm ? prm->authorization_servers.front() : detail::split_url(server_url).origin;
            if (as && issuer == iss) co_return;
        }
        for (const auto& url : detail::authorization_server_metadata_urls(iss)) {
            auto resp = co_await get(url);
            if (!is_2xx(resp.status)) continue;
            auto doc = detail::parse_authorization_server_metadata(resp.body);
            std::lock_guard lk(mu);
            issuer = iss;
            token_endpoint = doc.token_endpoint;
            as = std::move(doc);
            co_return;
        }
        if (have_prm) throw OAuthError("no authorization server metadata found for " + iss);
        // 2025-03-26 "Fallbacks for Servers without Metadata Discovery": the default
        // endpoints at the server's origin.
        AuthorizationServerMetadata doc;
        doc.issuer = iss;
        doc.authorization_endpoint = iss + "/authorize";
        doc.token_endpoint = iss + "/token";
        doc.registration_endpoint = iss + "/register";
        doc.code_challenge_methods_supported = std::vector<std::string>{"S256"};
        std::lock_guard lk(mu);
        issuer = iss;
        token_endpoint = doc.token_endpoint;
        as = std::move(doc);
    }

    // ---- Client identity ----------------------------------------------------------

    // 2025-11-25 "Client Registration Approaches", in its priority order.
    boost::asio::awaitable<ClientIdentity> ensure_client(const std::optional<std::string>& scope) {
        AuthorizationServerMetadata meta;
        {
            std::lock_guard lk(mu);
            if (options.client) co_return *options.client;
            if (client && !client->client_id.empty()) co_return *client;
            meta = *as;
        }
        if (meta.client_id_metadata_document_supported && !options.client_metadata_url.empty()) {
            ClientIdentity id{.client_id = options.client_metadata_url, .client_secret = {},
                              .token_endpoint_auth_method = "none"};
            std::lock_guard lk(mu);
            client = id;
            co_return id;
        }
        if (meta.registration_endpoint.empty())
            throw OAuthError("authorization server " + meta.issuer +
                             " offers no dynamic client registration and no client is configured "
                             "(set OAuthOptions::client or client_metadata_url)");
        // Ask for the method this client can best use: a public client (PKCE) when the
        // server allows it, else a secret in a Basic header, else in the body.
        std::string method;
        if (const auto& m = meta.token_endpoint_auth_methods_supported) {
            for (const char* pref : {"none", "client_secret_basic", "client_secret_post"})
                if (contains(m, pref)) {
                    method = pref;
                    break;
                }
        }
        std::string reg_body = detail::registration_body(options, method, scope);
        std::string reg_type = "application/json";
        auto resp = co_await post(meta.registration_endpoint, std::move(reg_type), std::move(reg_body));
        if (!is_2xx(resp.status))
            throw OAuthError("client registration at " + meta.registration_endpoint + " failed with HTTP " +
                                 std::to_string(resp.status) + ": " + body_excerpt(resp.body),
                             {}, resp.status);
        auto reg = detail::parse_registration_response(resp.body);
        ClientIdentity id{.client_id = reg.client_id, .client_secret = reg.client_secret,
                          .token_endpoint_auth_method = reg.token_endpoint_auth_method.empty()
                                                            ? method
                                                            : reg.token_endpoint_auth_method};
        log(LogLevel::info, channel, "registered client at " + meta.registration_endpoint);
        std::lock_guard lk(mu);
        client = id;
        co_return id;
    }

    // RFC 6749 §2.3 client authentication at the token endpoint.
    std::optional<std::string> authenticate(const ClientIdentity& id, detail::FormFields& fields) {
        std::string method = id.token_endpoint_auth_method;
        if (id.client_secret.empty()) {
            method = "none";
        } else if (method.empty() || method == "none") {
            std::lock_guard lk(mu);
            const auto* supported = as ? &as->token_endpoint_auth_methods_supported : nullptr;
            // RFC 8414 §2: an absent list means client_secret_basic.
            method = !supported || !*supported || contains(*supported, "client_secret_basic") ? "client_secret_basic"
                     : contains(*supported, "client_secret_post")                           ? "client_secret_post"
                                                                                             : "client_secret_basic";
        }
        if (method == "client_secret_basic") return detail::basic_authorization(id.client_id, id.client_secret);
        fields.emplace_back("client_id", id.client_id);
        if (method == "client_secret_post") fields.emplace_back("client_secret", id.client_secret);
        return std::nullopt;
    }

    boost::asio::awaitable<Tokens> token_request(const ClientIdentity& id, detail::FormFields fields) {
        std::string endpoint;
        {
            std::lock_guard lk(mu);
            endpoint = token_endpoint;
        }
        auto basic = authenticate(id, fields);
        std::string form = detail::form_encode(fields);
        std::string form_type = "application/x-www-form-urlencoded";
        auto resp = co_await post(endpoint, std::move(form_type), std::move(form), std::move(basic));
        if (!is_2xx(resp.status)) {
            // RFC 6749 §5.2: an error object, when the body is one.
            try {
                (void)detail::parse_token_response(resp.body, std::chrono::system_clock::now());
            } catch (const OAuthError& e) {
                throw OAuthError(std::string(e.what()) + " (HTTP " + std::to_string(resp.status) + ")",
                                 e.oauth_error(), resp.status);
            }
            throw OAuthError("token request failed with HTTP " + std::to_string(resp.status), {}, resp.status);
        }
        co_return detail::parse_token_response(resp.body, std::chrono::system_clock::now());
    }

    // ---- Grants -------------------------------------------------------------------

    boost::asio::awaitable<bool> refresh() {
        std::string refresh_token, res;
        std::optional<ClientIdentity> id;
        {
            std::lock_guard lk(mu);
            if (!tokens || tokens->refresh_token.empty() || token_endpoint.empty()) co_return false;
            refresh_token = tokens->refresh_token;
            res = resource;
            id = options.client ? options.client : client;
        }
        if (!id) co_return false;
        try {
            detail::FormFields f;
            f.emplace_back("grant_type", "refresh_token");
            f.emplace_back("refresh_token", refresh_token);
            f.emplace_back("resource", res);
            auto t = co_await token_request(*id, std::move(f));
            if (t.refresh_token.empty()) t.refresh_token = refresh_token;  // RFC 6749 §6: may be kept
            {
                std::lock_guard lk(mu);
                tokens = std::move(t);
            }
            co_await persist();
            co_return true;
        } catch (const OAuthError& e) {
            log(LogLevel::info, channel, std::string("token refresh failed, authorizing again: ") + e.what());
            std::lock_guard lk(mu);
            tokens.reset();
            co_return false;
        }
    }

    boost::asio::awaitable<void> flow(const std::optional<detail::BearerChallenge>& challenge, bool step_up) {
        std::optional<std::string> hinted;
        if (challenge) hinted = challenge->resource_metadata;
        const bool have_prm = co_await discover_resource(hinted);
        co_await discover_authorization_server(have_prm);

        std::optional<std::string> scope;
        {
            std::lock_guard lk(mu);
            if (options.scope) {
                scope = options.scope;
            } else {
                scope = detail::select_scope(challenge ? challenge->scope : std::nullopt, prm ? &*prm : nullptr);
                if (step_up && scope && !requested_scope.empty())
                    scope = detail::scope_union(requested_scope, *scope);
            }
            requested_scope = scope.value_or("");
            ++flows;
        }
        const ClientIdentity id = co_await ensure_client(scope);
        std::string res;
        AuthorizationServerMetadata meta;
        {
            std::lock_guard lk(mu);
            res = resource;
            meta = *as;
        }

        Tokens t;
        if (options.grant == Grant::client_credentials) {
            detail::FormFields f;
            f.emplace_back("grant_type", "client_credentials");
            if (scope) f.emplace_back("scope", *scope);
            f.emplace_back("resource", res);
            t = co_await token_request(id, std::move(f));
        } else {
            // 2025-11-25 "Authorization Code Protection": no advertised S256, no flow.
            if (!contains(meta.code_challenge_methods_supported, "S256"))
                throw OAuthError("authorization server " + meta.issuer +
                                 " does not advertise PKCE S256 (code_challenge_methods_supported); refusing to "
                                 "proceed");
            if (meta.authorization_endpoint.empty())
                throw OAuthError("authorization server " + meta.issuer + " has no authorization_endpoint");
            const auto pkce = detail::make_pkce();
            const std::string state = detail::random_token(16);
            detail::FormFields q;
            q.emplace_back("response_type", "code");
            q.emplace_back("client_id", id.client_id);
            q.emplace_back("redirect_uri", options.redirect_uri);
            q.emplace_back("code_challenge", pkce.challenge);
            q.emplace_back("code_challenge_method", "S256");
            q.emplace_back("state", state);
            if (scope) q.emplace_back("scope", *scope);
            q.emplace_back("resource", res);
            std::string authorization_url = detail::with_query(meta.authorization_endpoint, q);
            const std::string back = co_await options.redirect_handler(std::move(authorization_url));
            std::optional<std::string> code, got_state, error, error_description;
            for (auto& [k, v] : detail::query_params(back)) {
                if (k == "code") code = v;
                else if (k == "state") got_state = v;
                else if (k == "error") error = v;
                else if (k == "error_description") error_description = v;
            }
            // 2025-11-25 "Open Redirection": discard results without the original state.
            if (got_state != state) throw OAuthError("authorization response state does not match the request");
            if (error)
                throw OAuthError("authorization denied: " + *error + (error_description ? ": " + *error_description : ""),
                                 *error);
            if (!code) throw OAuthError("authorization response carries no code");
            detail::FormFields f;
            f.emplace_back("grant_type", "authorization_code");
            f.emplace_back("code", *code);
            f.emplace_back("redirect_uri", options.redirect_uri);
            f.emplace_back("code_verifier", pkce.verifier);
            f.emplace_back("resource", res);
            t = co_await token_request(id, std::move(f));
        }
        {
            std::lock_guard lk(mu);
            tokens = std::move(t);
        }
        log(LogLevel::info, channel, "obtained an access token for " + res);
        co_await persist();
    }

    // One flow (or refresh) at a time: the first caller owns it, later ones wait for it
    // and then retry with whatever it left. (A plain begin/end pair rather than a
    // coroutine taking a callable: GCC 12 destroys a coroutine's by-value lambda
    // parameter twice.)
    std::optional<async::Lazy<void>> join_or_start(const async::Lazy<void>& mine) {
        std::lock_guard lk(mu);
        if (flight) return *flight;
        flight = mine;
        return std::nullopt;
    }
    void end_flight(async::Lazy<void>& mine) {
        {
            std::lock_guard lk(mu);
            flight.reset();
        }
        mine.try_set_value();
    }
};

OAuthProvider::OAuthProvider(net::HttpClient http, std::string server_url, OAuthOptions options)
    : impl_(std::make_shared<Impl>(std::move(http), std::move(server_url), std::move(options),
                                   async::Runtime::default_runtime())) {}

OAuthProvider::~OAuthProvider() = default;

boost::asio::awaitable<std::optional<std::string>> OAuthProvider::async_authorization() {
    auto impl = impl_;
    co_await impl->ensure_loaded();
    bool stale = false;
    {
        std::lock_guard lk(impl->mu);
        stale = impl->tokens && impl->tokens->expires_at &&
                *impl->tokens->expires_at - impl->options.refresh_margin <= std::chrono::system_clock::now();
        if (stale && impl->tokens->refresh_token.empty()) {
            impl->tokens.reset();  // expired and not refreshable: the server's 401 starts a flow
            stale = false;
        }
    }
    if (stale) {
        async::Lazy<void> mine;
        if (auto theirs = impl->join_or_start(mine)) {
            co_await theirs->async_get();
        } else {
            std::exception_ptr err;
            try {
                (void)co_await impl->refresh();
            } catch (...) {
                err = std::current_exception();
            }
            impl->end_flight(mine);
            if (err) std::rethrow_exception(err);
        }
    }
    std::lock_guard lk(impl->mu);
    co_return impl->header_locked();
}

boost::asio::awaitable<void> OAuthProvider::async_handle_challenge(int status, std::optional<std::string> www_authenticate,
                                                                   std::optional<std::string> sent_authorization,
                                                                   int attempt) {
    auto impl = impl_;
    co_await impl->ensure_loaded();
    std::optional<detail::BearerChallenge> challenge;
    if (www_authenticate) challenge = detail::parse_bearer_challenge(*www_authenticate);
    const bool step_up = status == 403;
    if (step_up && (!challenge || challenge->error != "insufficient_scope"))
        throw OAuthError("MCP server refused the request (HTTP 403)", challenge && challenge->error ? *challenge->error : "",
                         403);
    if (attempt >= impl->options.max_authorizations)
        throw OAuthError("MCP server still answers HTTP " + std::to_string(status) + " after " + std::to_string(attempt) +
                             " authorization attempts" +
                             (challenge && challenge->error_description ? ": " + *challenge->error_description : ""),
                         challenge && challenge->error ? *challenge->error : "", status);
    {
        std::lock_guard lk(impl->mu);
        if (impl->header_locked() != sent_authorization && impl->tokens) co_return;  // already replaced
    }
    async::Lazy<void> mine;
    if (auto theirs = impl->join_or_start(mine)) {
        co_await theirs->async_get();
        co_return;
    }
    std::exception_ptr err;
    try {
        // A rejected token that can be refreshed is refreshed first (401 only: a
        // refreshed token keeps its scope, which a 403 says is not enough).
        bool refreshed = false;
        if (status == 401 && sent_authorization) refreshed = co_await impl->refresh();
        if (!refreshed) co_await impl->flow(challenge, step_up);
    } catch (...) {
        err = std::current_exception();
    }
    impl->end_flight(mine);
    if (err) std::rethrow_exception(err);
}

boost::asio::awaitable<void> OAuthProvider::async_authorize() {
    auto impl = impl_;
    co_await impl->ensure_loaded();
    async::Lazy<void> mine;
    if (auto theirs = impl->join_or_start(mine)) {
        co_await theirs->async_get();
        co_return;
    }
    std::exception_ptr err;
    try {
        const std::optional<detail::BearerChallenge> none;
        co_await impl->flow(none, false);
    } catch (...) {
        err = std::current_exception();
    }
    impl->end_flight(mine);
    if (err) std::rethrow_exception(err);
}

boost::asio::awaitable<void> OAuthProvider::async_sign_out() {
    auto impl = impl_;
    {
        std::lock_guard lk(impl->mu);
        impl->tokens.reset();
        impl->loaded = true;
    }
    co_await impl->persist();
}

const OAuthOptions& OAuthProvider::options() const noexcept { return impl_->options; }
const std::string& OAuthProvider::server_url() const noexcept { return impl_->server_url; }

std::optional<Tokens> OAuthProvider::tokens() const {
    std::lock_guard lk(impl_->mu);
    return impl_->tokens;
}

std::size_t OAuthProvider::authorizations() const {
    std::lock_guard lk(impl_->mu);
    return impl_->flows;
}

RedirectHandler headless_redirect_handler(net::HttpClient http) {
    return [http](std::string url) mutable -> boost::asio::awaitable<std::string> {
        net::HttpRequest req;
        req.method = "GET";
        req.url = url;
        net::HttpResponse resp;
        co_await http.async_request(req, resp);
        auto loc = resp.header("Location");
        if (resp.status < 300 || resp.status >= 400 || !loc)
            throw OAuthError("authorization endpoint answered HTTP " + std::to_string(resp.status) +
                                 " instead of a redirect",
                             {}, resp.status);
        std::string target(*loc);
        if (!target.empty() && target.front() == '/') target = detail::split_url(url).origin + target;
        co_return target;
    };
}

}  // namespace rath::mcp::oauth
