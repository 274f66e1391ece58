#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include "net/url.hpp"

#include <cstdint>
#include <cstring>

namespace rath::net {

std::string_view to_string(HttpErrorKind kind) noexcept {
    switch (kind) {
        case HttpErrorKind::invalid_request: return "invalid_request";
        case HttpErrorKind::connect: return "connect";
        case HttpErrorKind::proxy: return "proxy";
        case HttpErrorKind::tls: return "tls";
        case HttpErrorKind::timeout: return "timeout";
        case HttpErrorKind::protocol: return "protocol";
        case HttpErrorKind::closed: return "closed";
    }
    return "unknown";
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
