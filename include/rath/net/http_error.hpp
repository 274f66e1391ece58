#pragma once
// HttpError: a transport-level failure of an HTTP exchange (no response, or an
// unusable one). HTTP error *statuses* are not exceptions: they come back as an
// HttpResponse. Messages never contain header values (they may hold API keys) and
// URLs are reported without userinfo.
#include <rath/error.hpp>

#include <string>
#include <string_view>

namespace rath::net {

enum class HttpErrorKind {
    invalid_request,  // bad URL, unsupported scheme, forbidden characters in a header
    connect,          // DNS resolution or TCP connect failed / refused
    proxy,            // the proxy refused or broke the CONNECT tunnel
    tls,              // handshake or certificate / hostname verification failed
    timeout,          // connect, read (gap between bytes) or total deadline expired
    protocol,         // malformed HTTP response
    closed,           // the peer closed or reset the connection before the response was complete
    body_too_large,   // the response body exceeds HttpClientOptions::max_body_bytes
    header_too_large, // the status line and header fields exceed HttpClientOptions::max_header_bytes
    unsupported_encoding,  // a Content-Encoding other than gzip / identity (the body cannot be decoded)
};

[[nodiscard]] std::string_view to_string(HttpErrorKind kind) noexcept;

// Immutable: its accessors may be called from any thread.
class HttpError : public Error {
public:
    HttpError(HttpErrorKind kind, std::string url, const std::string& detail)
        : Error("HTTP " + std::string(to_string(kind)) + " error: " + detail + " (" + url + ")"),
          kind_(kind), url_(std::move(url)) {}

    [[nodiscard]] HttpErrorKind kind() const noexcept { return kind_; }
    // The request URL without credentials.
    [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
    HttpErrorKind kind_;
    std::string url_;
};

}  // namespace rath::net
