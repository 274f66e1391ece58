#include "lib/mcp/http/oauth_wire.hpp"

#include "net/base64.hpp"
#include "net/url.hpp"

#include <rath/net/http_error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace rath::mcp::oauth::detail {

namespace {

bool is_tchar(char c) {
    // RFC 7230 §3.2.6 token characters.
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void skip_ows(std::string_view s, std::size_t& i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// A token at s[i], or empty.
std::string_view read_token(std::string_view s, std::size_t& i) {
    const std::size_t b = i;
    while (i < s.size() && is_tchar(s[i])) ++i;
    return s.substr(b, i - b);
}

// A quoted-string at s[i] (which is '"'), unescaped; nullopt when unterminated.
std::optional<std::string> read_quoted(std::string_view s, std::size_t& i) {
    std::string out;
    ++i;
    while (i < s.size()) {
        const char c = s[i++];
        if (c == '"') return out;
        if (c == '\\' && i < s.size()) {
            out.push_back(s[i++]);
            continue;
        }
        out.push_back(c);
    }
    return std::nullopt;
}

[[noreturn]] void bad_document(std::string_view doc, const std::string& why) {
    throw OAuthError(std::string(doc) + ": " + why);
}

simdjson::dom::element parse_object(simdjson::dom::parser& parser, std::string_view json, std::string_view doc) {
    simdjson::dom::element root;
    if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS)
        bad_document(doc, "not valid JSON");
    if (!root.is_object()) bad_document(doc, "not a JSON object");
    return root;
}

std::optional<std::string> opt_string(simdjson::dom::element obj, std::string_view key, std::string_view doc) {
    simdjson::dom::element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
    std::string_view s;
    if (v.get(s) != simdjson::SUCCESS) bad_document(doc, "'" + std::string(key) + "' is not a string");
    return std::string(s);
}

std::string req_string(simdjson::dom::element obj, std::string_view key, std::string_view doc) {
    auto s = opt_string(obj, key, doc);
    if (!s || s->empty()) bad_document(doc, "missing '" + std::string(key) + "'");
    return *s;
}

std::optional<std::vector<std::string>> opt_strings(simdjson::dom::element obj, std::string_view key,
                                                    std::string_view doc) {
    simdjson::dom::element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
    simdjson::dom::array arr;
    if (v.get(arr) != simdjson::SUCCESS) bad_document(doc, "'" + std::string(key) + "' is not an array");
    std::vector<std::string> out;
    for (auto e : arr) {
        std::string_view s;
        if (e.get(s) != simdjson::SUCCESS) bad_document(doc, "'" + std::string(key) + "' holds a non-string");
        out.emplace_back(s);
    }
    return out;
}

std::vector<std::string> split_scopes(std::string_view s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ') ++i;
        const std::size_t b = i;
        while (i < s.size() && s[i] != ' ') ++i;
        if (i > b) out.emplace_back(s.substr(b, i - b));
    }
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string form_unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '+') {
            out.push_back(' ');
        } else if (c == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
            i += 2;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

}  // namespace

std::optional<BearerChallenge> parse_bearer_challenge(std::string_view s) {
    // challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ], challenges comma-separated.
    std::size_t i = 0;
    std::optional<BearerChallenge> bearer;
    bool in_bearer = false;
    while (i < s.size()) {
        skip_ows(s, i);
        if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
        }
        const std::string_view name = read_token(s, i);
        if (name.empty()) break;  // not a challenge list
        std::size_t j = i;
        skip_ows(s, j);
        if (j < s.size() && s[j] == '=') {
            // auth-param of the current challenge
            i = j + 1;
            skip_ows(s, i);
            std::string value;
            if (i < s.size() && s[i] == '"') {
                auto q = read_quoted(s, i);
                if (!q) break;
                value = std::move(*q);
            } else {
                value = std::string(read_token(s, i));
            }
            if (in_bearer) {
                const std::string key = lower(name);
                if (key == "resource_metadata")
                    bearer->resource_metadata = std::move(value);
                else if (key == "scope")
                    bearer->scope = std::move(value);
                else if (key == "error")
                    bearer->error = std::move(value);
                else if (key == "error_description")
                    bearer->error_description = std::move(value);
            }
            continue;
        }
        // A new auth-scheme (a token68 after it reads as a parameter no one asks for).
        in_bearer = lower(name) == "bearer" && !bearer;
        if (in_bearer) bearer.emplace();
    }
    return bearer;
}

SplitUrl split_url(std::string_view url) {
    net::detail::Target t;
    try {
        t = net::detail::parse_target(url);
    } catch (const net::HttpError& e) {
        throw OAuthError("not an absolute http(s) URL: " + std::string(e.what()));
    }
    SplitUrl out;
    out.origin = t.scheme + "://" + t.authority;
    std::string path = t.target.substr(0, t.target.find('?'));
    if (const auto hash = path.find('#'); hash != std::string::npos) path.resize(hash);
    while (!path.empty() && path.back() == '/') path.pop_back();
    out.path = std::move(path);
    return out;
}

std::string canonical_resource(std::string_view server_url) {
    const SplitUrl u = split_url(server_url);
    return u.origin + u.path;
}

std::vector<std::string> protected_resource_metadata_urls(std::string_view server_url) {
    const SplitUrl u = split_url(server_url);
    std::vector<std::string> out;
    if (!u.path.empty()) out.push_back(u.origin + "/.well-known/oauth-protected-resource" + u.path);
    out.push_back(u.origin + "/.well-known/oauth-protected-resource");
    return out;
}

std::vector<std::string> authorization_server_metadata_urls(std::string_view issuer) {
    const SplitUrl u = split_url(issuer);
    if (u.path.empty())
        return {u.origin + "/.well-known/oauth-authorization-server", u.origin + "/.well-known/openid-configuration"};
    return {u.origin + "/.well-known/oauth-authorization-server" + u.path,
            u.origin + "/.well-known/openid-configuration" + u.path,
            u.origin + u.path + "/.well-known/openid-configuration"};
}

bool resource_covers(std::string_view resource, std::string_view server_url) {
    SplitUrl r;
    try {
        r = split_url(resource);
    } catch (const OAuthError&) {
        return false;
    }
    const SplitUrl s = split_url(server_url);
    if (r.origin != s.origin) return false;
    if (r.path.empty()) return true;
    if (s.path.size() < r.path.size() || s.path.compare(0, r.path.size(), r.path) != 0) return false;
    return s.path.size() == r.path.size() || s.path[r.path.size()] == '/';
}

ProtectedResourceMetadata parse_protected_resource_metadata(std::string_view json) {
    constexpr std::string_view doc = "protected resource metadata";
    simdjson::dom::parser parser;
    const auto root = parse_object(parser, json, doc);
    ProtectedResourceMetadata m;
    m.resource = req_string(root, "resource", doc);
    auto servers = opt_strings(root, "authorization_servers", doc);
    if (!servers || servers->empty()) bad_document(doc, "no 'authorization_servers'");
    m.authorization_servers = std::move(*servers);
    m.scopes_supported = opt_strings(root, "scopes_supported", doc);
    return m;
}

AuthorizationServerMetadata parse_authorization_server_metadata(std::string_view json) {
    constexpr std::string_view doc = "authorization server metadata";
    simdjson::dom::parser parser;
    const auto root = parse_object(parser, json, doc);
    AuthorizationServerMetadata m;
    m.issuer = opt_string(root, "issuer", doc).value_or("");
    m.authorization_endpoint = opt_string(root, "authorization_endpoint", doc).value_or("");
    m.token_endpoint = req_string(root, "token_endpoint", doc);
    m.registration_endpoint = opt_string(root, "registration_endpoint", doc).value_or("");
    m.code_challenge_methods_supported = opt_strings(root, "code_challenge_methods_supported", doc);
    m.token_endpoint_auth_methods_supported = opt_strings(root, "token_endpoint_auth_methods_supported", doc);
    m.grant_types_supported = opt_strings(root, "grant_types_supported", doc);
    m.scopes_supported = opt_strings(root, "scopes_supported", doc);
    simdjson::dom::element v;
    bool b = false;
    if (root["client_id_metadata_document_supported"].get(v) == simdjson::SUCCESS && v.get(b) == simdjson::SUCCESS)
        m.client_id_metadata_document_supported = b;
    return m;
}

ClientRegistration parse_registration_response(std::string_view json) {
    constexpr std::string_view doc = "client registration response";
    simdjson::dom::parser parser;
    const auto root = parse_object(parser, json, doc);
    ClientRegistration r;
    r.client_id = req_string(root, "client_id", doc);
    r.client_secret = opt_string(root, "client_secret", doc).value_or("");
    r.token_endpoint_auth_method = opt_string(root, "token_endpoint_auth_method", doc).value_or("");
    return r;
}

Tokens parse_token_response(std::string_view json, std::chrono::system_clock::time_point now) {
    constexpr std::string_view doc = "token response";
    simdjson::dom::parser parser;
    const auto root = parse_object(parser, json, doc);
    if (auto err = opt_string(root, "error", doc)) {
        std::string what = "token endpoint answered " + *err;
        if (auto d = opt_string(root, "error_description", doc)) what += ": " + *d;
        throw OAuthError(what, *err);
    }
    Tokens t;
    t.access_token = req_string(root, "access_token", doc);
    t.token_type = opt_string(root, "token_type", doc).value_or("Bearer");
    t.refresh_token = opt_string(root, "refresh_token", doc).value_or("");
    t.scope = opt_string(root, "scope", doc).value_or("");
    simdjson::dom::element v;
    if (root["expires_in"].get(v) == simdjson::SUCCESS) {
        double secs = 0;
        std::int64_t i = 0;
        std::uint64_t u = 0;
        if (v.get(i) == simdjson::SUCCESS)
            secs = static_cast<double>(i);
        else if (v.get(u) == simdjson::SUCCESS)
            secs = static_cast<double>(u);
        else if (v.get(secs) != simdjson::SUCCESS)
            bad_document(doc, "'expires_in' is not a number");
        // A peer's number is validated before use: negative means already expired, and a
        // century caps what a duration can hold.
        secs = std::clamp(secs, 0.0, 100.0 * 365 * 24 * 3600);
        t.expires_at = now + std::chrono::seconds(static_cast<std::int64_t>(secs));
    }
    return t;
}

std::string base64url(std::string_view bytes) {
    std::string s = net::detail::base64_encode(bytes);
    for (char& c : s) {
        if (c == '+') c = '-';
        else if (c == '/') c = '_';
    }
    while (!s.empty() && s.back() == '=') s.pop_back();
    return s;
}

std::string random_token(std::size_t n) {
    std::string raw(n, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(n)) != 1)
        throw OAuthError("no random bytes available for PKCE/state");
    return base64url(raw);
}

std::string s256_challenge(std::string_view verifier) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), md);
    return base64url(std::string_view(reinterpret_cast<const char*>(md), sizeof md));
}

Pkce make_pkce() {
    Pkce p;
    p.verifier = random_token(32);  // 43 characters of the unreserved set (RFC 7636 §4.1)
    p.challenge = s256_challenge(p.verifier);
    return p;
}

std::string form_escape(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size() + 8);
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out.push_back(ch);
        } else if (c == ' ') {
            out.push_back('+');
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

std::string form_encode(const FormFields& fields) {
    std::string out;
    for (const auto& [k, v] : fields) {
        if (!out.empty()) out.push_back('&');
        out += form_escape(k);
        out.push_back('=');
        out += form_escape(v);
    }
    return out;
}

FormFields query_params(std::string_view url) {
    FormFields out;
    auto q = url.find('?');
    if (q == std::string_view::npos) return out;
    std::string_view rest = url.substr(q + 1);
    if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        out.emplace_back(form_unescape(pair.substr(0, eq)),
                         eq == std::string_view::npos ? std::string() : form_unescape(pair.substr(eq + 1)));
    }
    return out;
}

std::string with_query(std::string_view endpoint, const FormFields& fields) {
    std::string out(endpoint);
    if (const auto hash = out.find('#'); hash != std::string::npos) out.resize(hash);
    const std::string q = form_encode(fields);
    if (q.empty()) return out;
    if (out.find('?') == std::string::npos)
        out.push_back('?');
    else if (out.back() != '?' && out.back() != '&')
        out.push_back('&');
    return out + q;
}

std::optional<std::string> select_scope(const std::optional<std::string>& challenge_scope,
                                        const ProtectedResourceMetadata* prm) {
    if (challenge_scope && !split_scopes(*challenge_scope).empty()) return *challenge_scope;
    if (prm && prm->scopes_supported && !prm->scopes_supported->empty()) {
        std::string s;
        for (const auto& x : *prm->scopes_supported) {
            if (!s.empty()) s.push_back(' ');
            s += x;
        }
        return s;
    }
    return std::nullopt;
}

std::string scope_union(std::string_view a, std::string_view b) {
    std::vector<std::string> out = split_scopes(a);
    std::set<std::string> seen(out.begin(), out.end());
    for (auto& s : split_scopes(b))
        if (seen.insert(s).second) out.push_back(std::move(s));
    std::string joined;
    for (const auto& s : out) {
        if (!joined.empty()) joined.push_back(' ');
        joined += s;
    }
    return joined;
}

std::string registration_body(const OAuthOptions& options, std::string_view auth_method,
                              const std::optional<std::string>& scope) {
    boost::json::object o;
    o["client_name"] = options.client_name;
    o["redirect_uris"] = boost::json::array{boost::json::value(options.redirect_uri)};
    o["grant_types"] = boost::json::array{"authorization_code", "refresh_token"};
    o["response_types"] = boost::json::array{"code"};
    if (!auth_method.empty()) o["token_endpoint_auth_method"] = auth_method;
    if (scope) o["scope"] = *scope;
    return boost::json::serialize(o);
}

std::string basic_authorization(std::string_view client_id, std::string_view client_secret) {
    return "Basic " + net::detail::base64_encode(form_escape(client_id) + ":" + form_escape(client_secret));
}

}  // namespace rath::mcp::oauth::detail
