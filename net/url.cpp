#include "net/url.hpp"

#include "net/base64.hpp"

#include <rath/net/http_error.hpp>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace rath::net::detail {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string host_of(const boost::urls::url_view& u) {
    if (u.host_type() == boost::urls::host_type::ipv6) return u.host_ipv6_address().to_string();
    return lower(u.host());
}

std::string authority_of(const std::string& host, bool ipv6, std::uint16_t port, bool with_port) {
    std::string a;
    a.reserve(host.size() + 8);
    if (ipv6) a.push_back('[');
    a.append(host);
    if (ipv6) a.push_back(']');
    if (with_port) a.append(":").append(std::to_string(port));
    return a;
}

}  // namespace

Target parse_target(std::string_view url) {
    auto fail = [&](const std::string& why) -> HttpError {
        // Never echo the URL itself: it may carry credentials.
        return HttpError(HttpErrorKind::invalid_request, "<invalid url>", why);
    };
    auto r = boost::urls::parse_uri(url);
    if (!r) throw fail("not an absolute URL (" + r.error().message() + ")");
    const boost::urls::url_view u = *r;
    Target t;
    t.scheme = lower(u.scheme());
    if (t.scheme == "https")
        t.tls = true;
    else if (t.scheme != "http")
        throw fail("unsupported scheme '" + t.scheme + "' (only http and https)");
    if (!u.has_authority() || u.encoded_host().empty()) throw fail("URL has no host");
    t.host = host_of(u);
    const bool ipv6 = u.host_type() == boost::urls::host_type::ipv6;
    t.host_is_ip = ipv6 || u.host_type() == boost::urls::host_type::ipv4;
    const std::uint16_t default_port = t.tls ? 443 : 80;
    if (u.has_port() && !u.port().empty()) {
        if (u.port_number() == 0) throw fail("invalid port");
        t.port = u.port_number();
    } else {
        t.port = default_port;
    }
    t.authority = authority_of(t.host, ipv6, t.port, t.port != default_port);
    t.target = u.encoded_path().empty() ? std::string("/") : std::string(u.encoded_path());
    const std::string path_only = t.target;
    if (u.has_query()) {
        t.target += '?';
        t.target += std::string_view(u.encoded_query());
    }
    t.redacted = t.scheme + "://" + t.authority + path_only;
    return t;
}

std::optional<Proxy> parse_proxy(std::string_view url) {
    url = trim(url);
    if (url.empty()) return std::nullopt;
    std::string full(url);
    if (full.find("://") == std::string::npos) full = "http://" + full;
    auto r = boost::urls::parse_uri(full);
    if (!r || !r->has_authority() || r->encoded_host().empty())
        throw HttpError(HttpErrorKind::invalid_request, "<proxy>", "invalid proxy URL");
    const boost::urls::url_view u = *r;
    if (lower(u.scheme()) != "http")
        throw HttpError(HttpErrorKind::invalid_request, "<proxy>",
                        "unsupported proxy scheme '" + lower(u.scheme()) + "' (only http:// proxies)");
    Proxy p;
    p.host = host_of(u);
    const bool ipv6 = u.host_type() == boost::urls::host_type::ipv6;
    p.host_is_ip = ipv6 || u.host_type() == boost::urls::host_type::ipv4;
    p.port = (u.has_port() && u.port_number() != 0) ? u.port_number() : 80;
    p.authority = authority_of(p.host, ipv6, p.port, true);
    if (u.has_userinfo()) p.authorization = "Basic " + base64_encode(std::string(u.user()) + ":" + std::string(u.password()));
    return p;
}

bool no_proxy_matches(std::string_view no_proxy, const Target& t) {
    std::size_t pos = 0;
    while (pos <= no_proxy.size()) {
        std::size_t end = no_proxy.find_first_of(", ", pos);
        if (end == std::string_view::npos) end = no_proxy.size();
        std::string entry = lower(trim(no_proxy.substr(pos, end - pos)));
        pos = end + 1;
        if (entry.empty()) continue;
        if (entry == "*") return true;
        std::optional<std::uint16_t> port;
        // "[v6]:port", "host:port" (a bare IPv6 address has several colons: no port).
        if (entry.front() == '[') {
            auto close = entry.find(']');
            if (close == std::string::npos) continue;
            if (close + 1 < entry.size() && entry[close + 1] == ':')
                port = static_cast<std::uint16_t>(std::atoi(entry.c_str() + close + 2));
            entry = entry.substr(1, close - 1);
        } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
            auto colon = entry.find(':');
            port = static_cast<std::uint16_t>(std::atoi(entry.c_str() + colon + 1));
            entry.resize(colon);
        }
        if (port && *port != t.port) continue;
        if (entry.rfind("*.", 0) == 0) entry.erase(0, 2);
        else if (entry.front() == '.') entry.erase(0, 1);
        if (entry.empty()) continue;
        if (t.host == entry) return true;
        if (!t.host_is_ip && t.host.size() > entry.size() &&
            t.host.compare(t.host.size() - entry.size(), entry.size(), entry) == 0 &&
            t.host[t.host.size() - entry.size() - 1] == '.')
            return true;
    }
    return false;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::optional<std::string> env_value(const char* name) {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    std::string_view s = trim(v);
    if (s.empty()) return std::nullopt;
    return std::string(s);
}

}  // namespace rath::net::detail
