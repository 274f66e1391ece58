#pragma once
// Private: the HTTP client's response parser. It writes the status and header fields
// straight into the caller's HttpResponse (Beast's basic_fields would allocate every
// field) and the body into response.body, or, when streaming, into `pending` for the
// caller to hand on after each parse (a callback that throws must not unwind through
// Beast's parser or its composed operations). A gzip body is decoded on the way.
#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include <boost/beast/http/basic_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rath::net::detail {

class ResponseParser final : public boost::beast::http::basic_parser<false> {
public:
    // `out` is borrowed for the parser's lifetime; its headers and body are replaced.
    // `streaming_wanted`: a 2xx body goes to `pending` instead of out.body.
    // A body bound for out.body larger than `max_body` (announced, received or decoded)
    // fails the parse with http::error::body_limit before it is buffered; a header
    // larger than `max_header` with http::error::header_limit.
    ResponseParser(HttpResponse& out, bool streaming_wanted, std::size_t max_body, std::size_t max_header);
    ~ResponseParser() override;

    int status() const noexcept { return status_; }
    bool streaming() const noexcept { return streaming_; }
    // Body bytes parsed since the last take (streaming only).
    std::string pending;

    // A failure the parser found itself (an unsupported Content-Encoding, a corrupt or
    // truncated gzip body): the parse fails with http::error::bad_field and these give
    // the typed error.
    bool failed() const noexcept { return failed_; }
    HttpErrorKind failure_kind() const noexcept { return failure_kind_; }
    const std::string& failure_detail() const noexcept { return failure_detail_; }

    // Streaming a gzip body: decoding stops once `pending` holds a step's worth, so a
    // small read cannot inflate into a huge buffer; the compressed rest waits here until
    // the caller took `pending` and calls drain.
    bool backlogged() const noexcept { return !backlog_.empty(); }
    void drain(boost::system::error_code& ec);
    // Once the message is complete (and drained): false, with failed() set, when a gzip
    // body ended before its end marker.
    bool finish_decoding();

private:
    using error_code = boost::system::error_code;
    using string_view = boost::beast::string_view;
    struct Inflater;

    void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code& ec) override;
    void on_response_impl(int code, string_view, int, error_code&) override;
    void on_field_impl(boost::beast::http::field, string_view name, string_view value, error_code&) override;
    void on_header_impl(error_code&) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
    std::size_t on_body_impl(string_view body, error_code&) override;
    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
    void on_finish_impl(error_code&) override {}

    void fail(HttpErrorKind kind, std::string detail, error_code& ec);
    // Decodes from `in` (what it used is removed) into `out` until `in` is used up or
    // `out` reaches `stop_at` bytes; false when the data is corrupt.
    bool inflate(std::string_view& in, std::string& out, std::size_t stop_at, error_code& ec);

    HttpResponse& out_;
    bool streaming_wanted_;
    std::size_t max_body_;
    bool streaming_ = false;
    int status_ = 0;
    std::string content_encoding_;  // the Content-Encoding field(s), as received
    std::unique_ptr<Inflater> gzip_;
    std::size_t wire_bytes_ = 0;    // compressed body bytes received (whole-body gzip)
    std::string backlog_;           // streaming gzip: compressed bytes not decoded yet
    bool failed_ = false;
    HttpErrorKind failure_kind_ = HttpErrorKind::protocol;
    std::string failure_detail_;
};

}  // namespace rath::net::detail
