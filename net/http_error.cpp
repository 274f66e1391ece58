#include <rath/net/http_error.hpp>

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
        case HttpErrorKind::body_too_large: return "body_too_large";
        case HttpErrorKind::header_too_large: return "header_too_large";
        case HttpErrorKind::unsupported_encoding: return "unsupported_encoding";
    }
    return "unknown";
}

}  // namespace rath::net
