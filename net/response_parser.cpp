#include "net/response_parser.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cstdint>

namespace rath::net::detail {

namespace http = boost::beast::http;

namespace {
constexpr std::size_t max_body_reserve = std::size_t{1} << 24;  // what a Content-Length may pre-size
}  // namespace

ResponseParser::ResponseParser(HttpResponse& out, bool streaming_wanted, std::size_t max_body,
                               std::size_t max_header)
    : out_(out), streaming_wanted_(streaming_wanted), max_body_(max_body) {
    header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_header, UINT32_MAX)));
    // Beast's own body limit would also cap a streamed body, which is never held: the
    // cap is applied below, to the bytes that go to out.body.
    body_limit(boost::none);
    eager(true);  // a put() goes on from the header into the body
}

void ResponseParser::on_request_impl(http::verb, string_view, string_view, int, error_code& ec) {
    ec = http::error::bad_method;  // unreachable: this parser reads responses
}

void ResponseParser::on_response_impl(int code, string_view, int, error_code&) {
    status_ = code;
    out_.headers.clear();
}

void ResponseParser::on_field_impl(http::field, string_view name, string_view value, error_code&) {
    if (out_.headers.empty()) out_.headers.reserve(12, 320);  // a typical answer's fields, one block
    out_.headers.add(std::string_view(name.data(), name.size()), std::string_view(value.data(), value.size()));
}

void ResponseParser::on_header_impl(error_code&) {
    streaming_ = streaming_wanted_ && status_ >= 200 && status_ <= 299;
}

void ResponseParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code& ec) {
    if (!length || streaming_) return;
    if (*length > max_body_) {
        ec = http::error::body_limit;  // announced too large: fail before reading a byte of it
        return;
    }
    out_.body.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(*length, max_body_reserve)));
}

std::size_t ResponseParser::on_body_impl(string_view body, error_code& ec) {
    if (streaming_) {
        pending.append(body.data(), body.size());
        return body.size();
    }
    if (body.size() > max_body_ - out_.body.size()) {
        ec = http::error::body_limit;
        return 0;
    }
    out_.body.append(body.data(), body.size());
    return body.size();
}

std::size_t ResponseParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
    return on_body_impl(body, ec);
}

}  // namespace rath::net::detail
