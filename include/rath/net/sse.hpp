#pragma once
// SseParser: a pure state machine for `text/event-stream` bodies (WHATWG HTML
// "Server-sent events", §9.2.6 "Interpreting an event stream"). Feed it the body
// bytes as they arrive, split anywhere (inside a line, a UTF-8 sequence or a CRLF);
// it calls back once per dispatched event. No sockets, no allocation per event in
// steady state: the event handed to the callback is a reused member whose strings
// keep their capacity.
#include <rath/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rath::net {

struct SseEvent {
    std::string event{};                 // `event:` value; empty when none was sent (WHATWG's "message")
    std::string data{};                  // `data:` lines joined with '\n'
    std::string id{};                    // the last event id in effect at dispatch (persists across events)
    std::optional<std::uint64_t> retry{};  // `retry:` (ms) received since the previous dispatch, if any
};

// Caps on what a parser buffers: a peer that never ends a line or an event must not
// exhaust memory. HttpClientOptions::max_sse_line_bytes / max_sse_event_bytes carry
// the same numbers for a client's streams.
struct SseLimits {
    std::size_t max_line = std::size_t{8} << 20;    // one line, without its terminator
    std::size_t max_event = std::size_t{16} << 20;  // one event's data (its lines joined)
};

// A line or an event's data grew beyond the parser's SseLimits. Immutable. The LLM
// clients report it as rath::ResponseTooLargeError (the provider error family).
class SseError : public Error {
public:
    enum class Kind { line_too_large, event_too_large };
    SseError(Kind kind, std::size_t limit, const std::string& what) : Error(what), kind_(kind), limit_(limit) {}

    [[nodiscard]] Kind kind() const noexcept { return kind_; }
    // The cap that was exceeded, in bytes.
    [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

private:
    Kind kind_;
    std::size_t limit_;
};

// Thread safety: a parser holds one stream's state and is not synchronized; use it
// from one thread at a time (moving it between threads is fine). Distinct parsers
// share nothing. Errors: feed and finish throw SseError when a line exceeds
// limits.max_line or an event's data limits.max_event (checked before the bytes are
// buffered), and pass on whatever on_event throws.
class SseParser {
public:
    SseParser() = default;
    explicit SseParser(SseLimits limits) : limits_(limits) {}
    // One cap for both a line and an event.
    explicit SseParser(std::size_t max_size) : limits_{max_size, max_size} {}

    // Parses `bytes` and calls `on_event(SseEvent&)` for each complete event. The
    // event is only valid during the call (move its strings out to keep them). If
    // `on_event` throws, the exception propagates and the rest of `bytes` is not
    // parsed; call reset() before reusing the parser.
    template <class F>
    void feed(std::string_view bytes, F&& on_event) {
        begin_feed(bytes);
        std::string_view line;
        while (next_line(bytes, line)) {
            if (take_line(line)) {
                dispatched_ = true;
                on_event(event_);
            }
        }
    }

    // End of stream: treats an unterminated last line as complete and dispatches a
    // pending event that has data (WHATWG would discard it; real servers do end
    // without the final blank line). The last event id is kept.
    template <class F>
    void finish(F&& on_event) {
        if (end_stream()) {
            dispatched_ = true;
            on_event(event_);
        }
        clear_event();
    }

    // Dialect of servers that write each event as a bare JSON line (OpenSandbox's
    // execd does; its SDKs accept both forms): a line starting with `{` is taken as a
    // `data:` line instead of a field name, which WHATWG would ignore. Consecutive
    // such lines without a blank line between them join like data lines ('\n').
    void accept_bare_json_lines(bool on) noexcept { bare_json_ = on; }

    // The last `id:` value received (WHATWG "last event ID"), for reconnection.
    [[nodiscard]] std::string_view last_event_id() const noexcept { return last_id_; }
    // The last valid `retry:` value received, in milliseconds.
    [[nodiscard]] std::optional<std::uint64_t> reconnection_time() const noexcept { return reconnect_ms_; }

    // Back to the initial state (also forgets the last event id and the BOM check).
    void reset();

private:
    void begin_feed(std::string_view& bytes);
    // Extracts the next complete line from `bytes`; buffers an incomplete tail.
    bool next_line(std::string_view& bytes, std::string_view& line);
    // Interprets one line; true when an event is ready in event_.
    bool take_line(std::string_view line);
    bool end_stream();
    void clear_event();
    void check_line(std::size_t n) const;
    void check_event(std::size_t n) const;

    SseEvent event_;
    std::string line_buf_;     // an incomplete line carried across feeds
    std::string last_id_;
    std::optional<std::uint64_t> reconnect_ms_;
    SseLimits limits_{};
    std::uint8_t bom_matched_ = 0;  // bytes of a leading BOM matched so far
    bool bom_done_ = false;
    bool pending_cr_ = false;   // the previous feed ended with CR: skip a leading LF
    bool has_data_ = false;     // at least one data line in the current event
    bool dispatched_ = false;   // event_ was handed out and must be cleared
    bool line_in_buf_ = false;  // the last returned line lives in line_buf_
    bool bare_json_ = false;    // accept_bare_json_lines
};

}  // namespace rath::net
