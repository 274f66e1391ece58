#pragma once
// Private: request-target parsing, proxy selection (HTTP(S)_PROXY / NO_PROXY) and
// small encoding helpers for the HTTP client.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rath::net::detail {

struct Target {
    bool tls = false;
    std::string scheme;     // "http" / "https"
    std::string host;       // without IPv6 brackets, lower-case
    bool host_is_ip = false;
    std::uint16_t port = 0;
    std::string authority;  // Host header value: host[:port], IPv6 in brackets, default port omitted
    std::string target;     // origin-form: path + optional query ("/" when empty)
    std::string redacted;   // scheme://authority/path for messages (no userinfo, no query)
};

// Throws HttpError(invalid_request) for anything that is not an absolute http(s) URL.
Target parse_target(std::string_view url);

struct Proxy {
    std::string host;
    bool host_is_ip = false;
    std::uint16_t port = 0;
    std::string authority;      // host:port as written in CONNECT / pool keys
    std::string authorization;  // "Basic ..." when the proxy URL carries credentials, else empty
};

// Parses a proxy URL ("http://user:pass@host:port", or a bare "host:port").
// Empty input means "no proxy".
std::optional<Proxy> parse_proxy(std::string_view url);

// NO_PROXY semantics: comma/space separated entries; "*" matches everything; an
// entry matches the host itself and its subdomains (a leading "." or "*." is
// ignored); "host:port" entries also require the port.
bool no_proxy_matches(std::string_view no_proxy, const Target& target);

// ASCII case-insensitive equality (header names).
bool iequals(std::string_view a, std::string_view b) noexcept;

// Trimmed environment variable, nullopt when unset or blank.
std::optional<std::string> env_value(const char* name);

}  // namespace rath::net::detail
