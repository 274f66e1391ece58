// TokenStore: one JSON file per server in a 0700 directory, replaced atomically with
// mode 0600 (2025-11-25 "Token Theft": clients MUST store tokens securely).
#include <rath/log.hpp>
#include <rath/mcp/oauth.hpp>

#include "lib/config/atomic_file.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <openssl/sha.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rath::mcp::oauth {

namespace {

constexpr std::string_view channel = "rath.mcp.oauth";

std::string hex_sha256(std::string_view s) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), md);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < 16; ++i) {
        out.push_back(hex[md[i] >> 4]);
        out.push_back(hex[md[i] & 15]);
    }
    return out;
}

std::string get_string(simdjson::dom::element obj, std::string_view key) {
    std::string_view s;
    if (obj[key].get(s) != simdjson::SUCCESS) return {};
    return std::string(s);
}

}  // namespace

TokenStore::TokenStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path TokenStore::file_for(std::string_view resource) const {
    return dir_ / (hex_sha256(resource) + ".json");
}

std::optional<StoredAuthorization> TokenStore::load(std::string_view resource) const {
    const auto path = file_for(resource);
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(text).get(root) != simdjson::SUCCESS || !root.is_object()) {
        log(LogLevel::warning, channel, "ignoring unreadable token file " + path.string());
        return std::nullopt;
    }
    StoredAuthorization e;
    e.resource = get_string(root, "resource");
    if (e.resource != resource) return std::nullopt;  // a hash collision or a hand-edited file
    e.issuer = get_string(root, "issuer");
    e.token_endpoint = get_string(root, "token_endpoint");
    simdjson::dom::element client;
    if (root["client"].get(client) == simdjson::SUCCESS && client.is_object()) {
        e.client.client_id = get_string(client, "client_id");
        e.client.client_secret = get_string(client, "client_secret");
        e.client.token_endpoint_auth_method = get_string(client, "token_endpoint_auth_method");
    }
    simdjson::dom::element tokens;
    if (root["tokens"].get(tokens) == simdjson::SUCCESS && tokens.is_object()) {
        Tokens t;
        t.access_token = get_string(tokens, "access_token");
        t.token_type = get_string(tokens, "token_type");
        t.refresh_token = get_string(tokens, "refresh_token");
        t.scope = get_string(tokens, "scope");
        std::int64_t exp = 0;
        if (tokens["expires_at"].get(exp) == simdjson::SUCCESS)
            t.expires_at = std::chrono::system_clock::time_point(std::chrono::seconds(exp));
        if (!t.access_token.empty()) e.tokens = std::move(t);
    }
    return e;
}

void TokenStore::save(const StoredAuthorization& e) const {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw OAuthError("cannot create token directory " + dir_.string() + ": " + ec.message());
    ::chmod(dir_.c_str(), 0700);
    boost::json::object o;
    o["resource"] = e.resource;
    o["issuer"] = e.issuer;
    o["token_endpoint"] = e.token_endpoint;
    o["client"] = boost::json::object{{"client_id", e.client.client_id},
                                      {"client_secret", e.client.client_secret},
                                      {"token_endpoint_auth_method", e.client.token_endpoint_auth_method}};
    if (e.tokens) {
        boost::json::object t{{"access_token", e.tokens->access_token},
                              {"token_type", e.tokens->token_type},
                              {"refresh_token", e.tokens->refresh_token},
                              {"scope", e.tokens->scope}};
        if (e.tokens->expires_at)
            t["expires_at"] =
                std::chrono::duration_cast<std::chrono::seconds>(e.tokens->expires_at->time_since_epoch()).count();
        o["tokens"] = std::move(t);
    }
    const auto path = file_for(e.resource);
    const auto err = rath::detail::write_file_atomically(path, boost::json::serialize(o),
                                                         {.temp_name = ".tokens_XXXXXX.tmp", .mode = 0600, .durable = true});
    if (err) throw OAuthError("cannot write token file " + path.string() + ": " + std::strerror(err.error));
}

void TokenStore::erase(std::string_view resource) const {
    std::error_code ec;
    std::filesystem::remove(file_for(resource), ec);
}

}  // namespace rath::mcp::oauth
