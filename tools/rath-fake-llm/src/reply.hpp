#pragma once
// Reply: everything the socket driver needs to send one response, decided by the
// engine without touching a socket: status, headers, body (with SSE event
// boundaries for per-token delays), delays and how to cut the connection.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rath::fake_llm::detail {

struct Reply {
    enum class Kind : std::uint8_t { other, tool_call, final_text };

    unsigned status = 200;
    std::string_view content_type;  // static storage
    bool sse = false;               // chunked text/event-stream
    std::string extra_headers;      // complete "name: value\r\n" lines
    std::string body;
    std::vector<std::size_t> event_ends;  // SSE: offset just past each event
    std::chrono::milliseconds latency{0};
    std::chrono::milliseconds token_delay{0};
    bool reset = false;           // send `reset_after` body bytes, then reset the connection
    std::size_t reset_after = 0;
    bool close = false;           // close the connection after this response
    // For the counters.
    bool llm = false;  // a chat/messages response
    Kind kind = Kind::other;
    bool fault = false;
    bool client_error = false;
    bool not_found = false;
    bool embedding = false;

    void clear() {
        status = 200;
        content_type = {};
        sse = false;
        extra_headers.clear();
        body.clear();
        event_ends.clear();
        latency = token_delay = std::chrono::milliseconds(0);
        reset = false;
        reset_after = 0;
        close = false;
        llm = false;
        kind = Kind::other;
        fault = client_error = not_found = embedding = false;
    }
};

std::string_view reason_phrase(unsigned status);

// Appends the status line and headers (content-length or chunked) for `r`.
void append_head(std::string& out, const Reply& r, bool keep_alive);

}  // namespace rath::fake_llm::detail
