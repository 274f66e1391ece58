#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include <cctype>

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

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
    for (const auto& h : headers) {
        if (h.name.size() != name.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < name.size() && same; ++i)
            same = std::tolower(static_cast<unsigned char>(h.name[i])) ==
                   std::tolower(static_cast<unsigned char>(name[i]));
        if (same) return std::string_view(h.value);
    }
    return std::nullopt;
}

}  // namespace rath::net
