#pragma once
// Reading HTTP messages without a read buffer per connection: a connection that waits
// for its next message holds no buffer (a fan-out parks thousands of them); when the
// socket is readable, one read lands in this thread's buffer and is parsed from there.
// Only bytes the parser could not use yet (a header cut short, a pipelined message)
// are kept by the connection. Used by the HTTP client and by the fake server.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <cstddef>

namespace rath::net::detail {

inline constexpr std::size_t thread_read_size = 16 * 1024;

// This thread's read buffer of thread_read_size bytes (made on first use).
char* thread_read_buffer();

// Appends `n` bytes to a connection's buffer of bytes not parsed yet.
void keep_unparsed(boost::beast::flat_buffer& pending, const char* data, std::size_t n);

// Feeds `data` to `parser` until it is done or wants more bytes, and returns how many
// bytes it used. `ec` is a parse error (never need_more); the caller keeps the bytes
// from the returned offset on when there is no error.
template <bool isRequest>
std::size_t feed(boost::beast::http::basic_parser<isRequest>& parser, const char* data, std::size_t n,
                 boost::system::error_code& ec) {
    std::size_t off = 0;
    while (off < n && !parser.is_done()) {
        const std::size_t used = parser.put(boost::asio::buffer(data + off, n - off), ec);
        off += used;
        if (ec == boost::beast::http::error::need_more) ec = {};
        if (ec || used == 0) break;
    }
    return off;
}

// Parses what `pending` holds (bytes read earlier that the parser could not use yet)
// and drops what it used; returns how many bytes that was. `ec` is a parse error
// (never need_more).
template <bool isRequest>
std::size_t parse_pending(boost::beast::http::basic_parser<isRequest>& parser, boost::beast::flat_buffer& pending,
                          boost::system::error_code& ec) {
    const std::size_t used = parser.put(pending.data(), ec);
    pending.consume(used);
    if (ec == boost::beast::http::error::need_more) ec = {};
    return used;
}

// Parses `n` bytes just read into this thread's buffer: after what `pending` holds, if
// anything, else straight from the buffer; bytes the parser cannot use yet stay in
// `pending`. `ec` is a parse error.
template <bool isRequest>
void parse_read(boost::beast::http::basic_parser<isRequest>& parser, boost::beast::flat_buffer& pending,
                const char* data, std::size_t n, boost::system::error_code& ec) {
    if (pending.size() > 0) {
        keep_unparsed(pending, data, n);
        parse_pending(parser, pending, ec);
        return;
    }
    const std::size_t used = feed(parser, data, n, ec);
    if (!ec) keep_unparsed(pending, data + used, n - used);
}

}  // namespace rath::net::detail
