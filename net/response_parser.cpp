#include "net/response_parser.hpp"

#include <rath/net/peer_bytes.hpp>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

namespace rath::net::detail {

namespace http = boost::beast::http;

namespace {
constexpr std::size_t max_body_reserve = std::size_t{1} << 24;  // what a Content-Length may pre-size
constexpr std::size_t inflate_chunk = std::size_t{16} << 10;     // output room per inflate() call
constexpr std::size_t stream_step = std::size_t{64} << 10;       // decoded bytes per hand-over when streaming

std::string trimmed_lower(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}
}  // namespace

// One gzip decoder (several concatenated members are one body, as RFC 1952 allows).
struct ResponseParser::Inflater {
    Inflater() { ok = inflateInit2(&z, 16 + MAX_WBITS) == Z_OK; }
    ~Inflater() {
        if (ok) inflateEnd(&z);
    }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    z_stream z{};
    bool ok = false;
    bool ended = false;  // the current member's end marker was read
};

ResponseParser::ResponseParser(HttpResponse& out, bool streaming_wanted, std::size_t max_body,
                               std::size_t max_header)
    : out_(out), streaming_wanted_(streaming_wanted), max_body_(max_body) {
    header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_header, UINT32_MAX)));
    // Beast's own body limit would also cap a streamed body, which is never held: the
    // cap is applied below, to the bytes that go to out.body.
    body_limit(boost::none);
    eager(true);  // a put() goes on from the header into the body
}

ResponseParser::~ResponseParser() = default;

void ResponseParser::fail(HttpErrorKind kind, std::string detail, error_code& ec) {
    failed_ = true;
    failure_kind_ = kind;
    failure_detail_ = std::move(detail);
    ec = http::error::bad_field;
}

void ResponseParser::on_request_impl(http::verb, string_view, string_view, int, error_code& ec) {
    ec = http::error::bad_method;  // unreachable: this parser reads responses
}

void ResponseParser::on_response_impl(int code, string_view, int, error_code&) {
    status_ = code;
    out_.headers.clear();
}

void ResponseParser::on_field_impl(http::field f, string_view name, string_view value, error_code&) {
    if (out_.headers.empty()) out_.headers.reserve(12, 320);  // a typical answer's fields, one block
    out_.headers.add(std::string_view(name.data(), name.size()), std::string_view(value.data(), value.size()));
    if (f == http::field::content_encoding) {
        if (!content_encoding_.empty()) content_encoding_.push_back(',');
        content_encoding_.append(value.data(), value.size());
    }
}

void ResponseParser::on_header_impl(error_code&) {
    streaming_ = streaming_wanted_ && status_ >= 200 && status_ <= 299;
}

void ResponseParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code& ec) {
    // Only a body that is there needs decoding (a HEAD answer or an empty body may
    // name any encoding).
    if (!content_encoding_.empty()) {
        const std::string enc = trimmed_lower(content_encoding_);
        if (enc == "gzip" || enc == "x-gzip") {
            gzip_ = std::make_unique<Inflater>();
            if (!gzip_->ok) return fail(HttpErrorKind::protocol, "cannot start the gzip decoder", ec);
        } else if (enc != "identity") {
            return fail(HttpErrorKind::unsupported_encoding,
                        "unsupported Content-Encoding " + quote_peer_bytes(content_encoding_, 64) + " (only gzip is decoded)",
                        ec);
        }
    }
    if (!length || streaming_) return;
    if (*length > max_body_) {
        ec = http::error::body_limit;  // announced too large: fail before reading a byte of it
        return;
    }
    if (!gzip_) out_.body.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(*length, max_body_reserve)));
}

bool ResponseParser::inflate(std::string_view& in, std::string& out, std::size_t stop_at, error_code& ec) {
    z_stream& z = gzip_->z;
    while (!in.empty() && out.size() < stop_at) {
        if (gzip_->ended) {
            // Bytes after a member's end start the next member.
            if (inflateReset(&z) != Z_OK) break;
            gzip_->ended = false;
        }
        const std::size_t old = out.size();
        out.resize(old + inflate_chunk);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), std::numeric_limits<uInt>::max()));
        z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
        z.avail_out = static_cast<uInt>(inflate_chunk);
        const uInt offered = z.avail_in;
        const int rc = ::inflate(&z, Z_NO_FLUSH);
        out.resize(old + (inflate_chunk - z.avail_out));
        in.remove_prefix(offered - z.avail_in);
        if (rc == Z_STREAM_END) {
            gzip_->ended = true;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            fail(HttpErrorKind::protocol,
                 std::string("corrupt gzip body (") + (z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")", ec);
            return false;
        } else if (offered == z.avail_in && out.size() == old) {
            break;  // no progress: needs more input
        }
    }
    return true;
}

std::size_t ResponseParser::on_body_impl(string_view body, error_code& ec) {
    if (streaming_) {
        if (!gzip_) {
            pending.append(body.data(), body.size());
            return body.size();
        }
        backlog_.append(body.data(), body.size());
        drain(ec);
        return body.size();
    }
    if (gzip_) {
        // Both what arrives and what it decodes to are capped: a small body may inflate
        // a thousandfold.
        wire_bytes_ += body.size();
        if (wire_bytes_ > max_body_) {
            ec = http::error::body_limit;
            return 0;
        }
        std::string_view in(body.data(), body.size());
        if (!inflate(in, out_.body, max_body_ + 1, ec)) return 0;
        if (out_.body.size() > max_body_) {
            ec = http::error::body_limit;
            return 0;
        }
        return body.size();
    }
    if (body.size() > max_body_ - out_.body.size()) {
        ec = http::error::body_limit;
        return 0;
    }
    out_.body.append(body.data(), body.size());
    return body.size();
}

void ResponseParser::drain(error_code& ec) {
    std::string_view in(backlog_);
    const bool ok = inflate(in, pending, pending.size() + stream_step, ec);
    // zlib takes in all it is offered unless its output is full, so what stays is what
    // the step limit left for the next drain.
    backlog_.erase(0, backlog_.size() - in.size());
    if (!ok) backlog_.clear();
}

std::size_t ResponseParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
    return on_body_impl(body, ec);
}

bool ResponseParser::finish_decoding() {
    if (!gzip_ || gzip_->ended || failed_) return !failed_;
    error_code ignored;
    fail(HttpErrorKind::protocol, "the gzip body ended before its end marker (truncated response)", ignored);
    return false;
}

}  // namespace rath::net::detail
