#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include "net/http_message.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace rath::net {

using namespace std::string_view_literals;

namespace detail {

namespace {

bool is_token_char(char c) {
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
    switch (c) {
        case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
        case '-': case '.': case '^': case '_': case '`': case '|': case '~': return true;
        default: return false;
    }
}

bool method_has_body(std::string_view m) { return m == "POST" || m == "PUT" || m == "PATCH"; }

}  // namespace

void validate_header(const HttpHeader& h, const std::string& url) {
    if (h.name.empty() || !std::all_of(h.name.begin(), h.name.end(), is_token_char))
        throw HttpError(HttpErrorKind::invalid_request, url, "invalid header name '" + h.name + "'");
    if (h.value.find_first_of("\r\n", 0, 3) != std::string::npos)
        throw HttpError(HttpErrorKind::invalid_request, url, "value of header '" + h.name + "' contains CR, LF or NUL");
}

void validate_request(const HttpRequest& r, const std::string& url) {
    for (const auto& p : r.body_parts)
        if (!p) throw HttpError(HttpErrorKind::invalid_request, url, "null body part");
    if (r.method.empty() || !std::all_of(r.method.begin(), r.method.end(), is_token_char))
        throw HttpError(HttpErrorKind::invalid_request, url, "invalid method '" + r.method + "'");
    for (const auto& h : r.headers) validate_header(h, url);
}

bool is_length_header(std::string_view name) noexcept {
    return iequals(name, "content-length") || iequals(name, "transfer-encoding");
}

void write_request_head(std::string& head, const HttpRequest& r, const Target& t, const Proxy* px,
                        std::string_view user_agent, bool accept_gzip) {
    head.clear();
    head.append(r.method).push_back(' ');
    if (px && !t.tls) head.append(t.scheme).append("://"sv).append(t.authority);  // absolute-form via proxy
    head.append(t.target).append(" HTTP/1.1\r\n"sv);
    bool has_host = false, has_ua = false, has_ae = false;
    if (const auto& preset = r.preset_headers) {
        head.append(preset->wire());
        has_host = preset->contains("host");
        has_ua = preset->contains("user-agent");
        has_ae = preset->contains("accept-encoding");
    }
    for (const auto& h : r.headers) {
        if (is_length_header(h.name)) continue;
        has_host |= iequals(h.name, "host");
        has_ua |= iequals(h.name, "user-agent");
        has_ae |= iequals(h.name, "accept-encoding");
        head.append(h.name).append(": "sv).append(h.value).append("\r\n"sv);
    }
    if (!has_host) head.append("Host: "sv).append(t.authority).append("\r\n"sv);
    if (!has_ua && !user_agent.empty()) head.append("User-Agent: "sv).append(user_agent).append("\r\n"sv);
    if (!has_ae && accept_gzip) head.append("Accept-Encoding: gzip\r\n"sv);
    const std::size_t body_size = r.body_size();
    if (body_size > 0 || method_has_body(r.method))
        head.append("Content-Length: "sv).append(std::to_string(body_size)).append("\r\n"sv);
    if (px && !t.tls && !px->authorization.empty())
        head.append("Proxy-Authorization: "sv).append(px->authorization).append("\r\n"sv);
    head.append("\r\n"sv);
}

}  // namespace detail

HeaderBlock::HeaderBlock(std::vector<HttpHeader> headers) {
    std::erase_if(headers, [](const HttpHeader& h) { return detail::is_length_header(h.name); });
    std::size_t n = 0;
    for (const auto& h : headers) {
        detail::validate_header(h, "<preset headers>");
        n += h.name.size() + h.value.size() + 4;
    }
    wire_.reserve(n);
    for (const auto& h : headers) wire_.append(h.name).append(": ").append(h.value).append("\r\n");
    headers_ = std::move(headers);
}

bool HeaderBlock::contains(std::string_view name) const noexcept {
    return std::any_of(headers_.begin(), headers_.end(),
                       [&](const HttpHeader& h) { return detail::iequals(h.name, name); });
}

std::vector<HttpHeader> HeaderBlock::merged(const std::vector<HttpHeader>& overrides) const {
    std::vector<HttpHeader> out = headers_;
    for (const auto& o : overrides) {
        auto it = std::find_if(out.begin(), out.end(), [&](const HttpHeader& h) { return detail::iequals(h.name, o.name); });
        if (it != out.end())
            it->value = o.value;
        else
            out.push_back(o);
    }
    return out;
}

std::size_t HttpRequest::body_size() const noexcept {
    std::size_t n = body.size();
    for (const auto& p : body_parts) n += p ? p->size() : 0;
    return n;
}

std::string HttpRequest::full_body() const {
    std::string out;
    out.reserve(body_size());
    out += body;
    for (const auto& p : body_parts)
        if (p) out += *p;
    return out;
}

namespace {
std::uint32_t read_length(const char* p) noexcept {
    std::uint32_t n;
    std::memcpy(&n, p, sizeof n);
    return n;
}
}  // namespace

HttpHeaders::HttpHeaders(std::initializer_list<HttpHeader> fields) {
    for (const auto& f : fields) add(f.name, f.value);
}

void HttpHeaders::add(std::string_view name, std::string_view value) {
    const auto n = static_cast<std::uint32_t>(name.size());
    const auto v = static_cast<std::uint32_t>(value.size());
    char lengths[8];
    std::memcpy(lengths, &n, 4);
    std::memcpy(lengths + 4, &v, 4);
    text_.append(lengths, sizeof lengths);
    text_.append(name);
    text_.append(value);
    ++count_;
}

HttpHeaders::Field HttpHeaders::const_iterator::operator*() const noexcept {
    const std::uint32_t n = read_length(p_);
    const std::uint32_t v = read_length(p_ + 4);
    return {std::string_view(p_ + 8, n), std::string_view(p_ + 8 + n, v)};
}

HttpHeaders::const_iterator& HttpHeaders::const_iterator::operator++() noexcept {
    p_ += 8 + read_length(p_) + read_length(p_ + 4);
    return *this;
}

std::optional<std::string_view> HttpHeaders::find(std::string_view name) const noexcept {
    for (const Field f : *this)
        if (detail::iequals(f.name, name)) return f.value;
    return std::nullopt;
}

std::optional<std::string_view> HttpResponse::header(std::string_view name) const { return headers.find(name); }

}  // namespace rath::net
