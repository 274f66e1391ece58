#pragma once
// The one way bytes from a peer (a body that is not JSON, a bad SSE event, a header
// value) are quoted in an error message or a log line: escaped so that no control
// character, terminal escape or invalid UTF-8 reaches the reader, and shortened so
// that a huge answer cannot make a huge message. Pure function, thread-safe, does not
// throw (beyond std::bad_alloc).
#include <cstddef>
#include <string>
#include <string_view>

namespace rath::net {

inline constexpr std::size_t peer_bytes_quote_limit = 200;

// `bytes` between double quotes, printable ASCII kept, `"` and `\` backslashed, tab,
// CR and LF as \t \r \n, every other byte (controls, DEL, all of 0x80-0xFF) as \xNN.
// Input longer than `max_bytes` is cut there and followed by "…(N bytes)" with N the
// full size: `"abc"…(5000 bytes)`.
[[nodiscard]] std::string quote_peer_bytes(std::string_view bytes, std::size_t max_bytes = peer_bytes_quote_limit);

}  // namespace rath::net
