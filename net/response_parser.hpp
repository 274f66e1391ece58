#pragma once
// Private: the HTTP client's response parser. It writes the status and header fields
// straight into the caller's HttpResponse (Beast's basic_fields would allocate every
// field) and the body into response.body, or, when streaming, into `pending` for the
// caller to hand on after each parse (a callback that throws must not unwind through
// Beast's parser or its composed operations).
#include <rath/net/http.hpp>

#include <boost/beast/http/basic_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rath::net::detail {

class ResponseParser final : public boost::beast::http::basic_parser<false> {
public:
    // `out` is borrowed for the parser's lifetime; its headers and body are replaced.
    // `streaming_wanted`: a 2xx body goes to `pending` instead of out.body.
    // A body bound for out.body larger than `max_body` (announced or received) fails the
    // parse with http::error::body_limit before it is buffered; a header larger than
    // `max_header` with http::error::header_limit.
    ResponseParser(HttpResponse& out, bool streaming_wanted, std::size_t max_body, std::size_t max_header);

    int status() const noexcept { return status_; }
    bool streaming() const noexcept { return streaming_; }
    // Body bytes parsed since the last take (streaming only).
    std::string pending;

private:
    using error_code = boost::system::error_code;
    using string_view = boost::beast::string_view;

    void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code& ec) override;
    void on_response_impl(int code, string_view, int, error_code&) override;
    void on_field_impl(boost::beast::http::field, string_view name, string_view value, error_code&) override;
    void on_header_impl(error_code&) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
    std::size_t on_body_impl(string_view body, error_code&) override;
    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
    void on_finish_impl(error_code&) override {}

    HttpResponse& out_;
    bool streaming_wanted_;
    std::size_t max_body_;
    bool streaming_ = false;
    int status_ = 0;
};

}  // namespace rath::net::detail
