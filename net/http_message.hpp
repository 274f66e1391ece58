#pragma once
// Private: the HTTP client's request-side rules, shared by HeaderBlock and the client:
// field and method validation, and the request head written in place.
#include <rath/net/http.hpp>

#include "net/url.hpp"

#include <string>
#include <string_view>

namespace rath::net::detail {

// Throws HttpError(invalid_request) naming `url` and the field, never its value (header
// values may be secrets).
void validate_header(const HttpHeader& h, const std::string& url);
// The method, every header and every body part (none may be null).
void validate_request(const HttpRequest& r, const std::string& url);

// Content-Length or Transfer-Encoding: fields the client writes itself.
bool is_length_header(std::string_view name) noexcept;

// Replaces `head` with the request line and header fields of `r` for target `t`
// (absolute-form through a plain-HTTP proxy `px`), ending with the blank line: the
// preset block, the request's own fields, then Host, User-Agent, Accept-Encoding,
// Content-Length and Proxy-Authorization unless given. `head` keeps its capacity from request to request.
// `accept_gzip` adds Accept-Encoding: gzip unless the request has an Accept-Encoding.
void write_request_head(std::string& head, const HttpRequest& r, const Target& t, const Proxy* px,
                        std::string_view user_agent, bool accept_gzip);

}  // namespace rath::net::detail
