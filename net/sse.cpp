// SSE line splitting and field interpretation (WHATWG "Interpreting an event stream").
#include <rath/net/sse.hpp>

#include <cstring>
#include <limits>

namespace rath::net {

namespace {
constexpr char bom[] = "\xEF\xBB\xBF";
}

void SseParser::reset() {
    event_ = SseEvent{};
    line_buf_.clear();
    last_id_.clear();
    reconnect_ms_.reset();
    bom_matched_ = 0;
    bom_done_ = false;
    pending_cr_ = false;
    has_data_ = false;
    dispatched_ = false;
    line_in_buf_ = false;
}

void SseParser::clear_event() {
    event_.event.clear();
    event_.data.clear();
    event_.id.clear();
    event_.retry.reset();
    has_data_ = false;
    dispatched_ = false;
}

void SseParser::check_line(std::size_t n) const {
    if (n > limits_.max_line)
        throw SseError(SseError::Kind::line_too_large, limits_.max_line,
                       "SSE line longer than the cap of " + std::to_string(limits_.max_line) +
                           " bytes (missing line terminator?)");
}

void SseParser::check_event(std::size_t n) const {
    if (n > limits_.max_event)
        throw SseError(SseError::Kind::event_too_large, limits_.max_event,
                       "SSE event data larger than the cap of " + std::to_string(limits_.max_event) + " bytes");
}

void SseParser::begin_feed(std::string_view& bytes) {
    if (dispatched_) clear_event();
    if (line_in_buf_) {
        line_buf_.clear();
        line_in_buf_ = false;
    }
    // A single leading U+FEFF is not part of the stream; it may itself arrive split.
    while (!bom_done_ && !bytes.empty()) {
        if (bytes.front() == bom[bom_matched_]) {
            bytes.remove_prefix(1);
            if (++bom_matched_ == 3) bom_done_ = true;
        } else {
            line_buf_.append(bom, bom_matched_);  // a false start is ordinary content
            bom_done_ = true;
        }
    }
    if (pending_cr_ && !bytes.empty()) {
        // CR at the end of the previous feed and LF here are one line ending.
        if (bytes.front() == '\n') bytes.remove_prefix(1);
        pending_cr_ = false;
    }
}

bool SseParser::next_line(std::string_view& bytes, std::string_view& line) {
    if (line_in_buf_) {
        line_buf_.clear();
        line_in_buf_ = false;
    }
    const std::size_t n = bytes.size();
    if (n == 0) return false;
    const char* p = bytes.data();
    const void* nl = std::memchr(p, '\n', n);
    const std::size_t lim = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - p) : n;
    const void* cr = std::memchr(p, '\r', lim);
    std::size_t end;
    std::size_t consumed;
    if (cr) {
        end = static_cast<std::size_t>(static_cast<const char*>(cr) - p);
        consumed = end + 1;
        if (consumed < n) {
            if (p[consumed] == '\n') ++consumed;
        } else {
            pending_cr_ = true;
        }
    } else if (nl) {
        end = lim;
        consumed = lim + 1;
    } else {
        check_line(line_buf_.size() + n);
        line_buf_.append(p, n);
        bytes = {};
        return false;
    }
    check_line(line_buf_.size() + end);  // a whole line in one feed is held by the event too
    if (!line_buf_.empty()) {
        line_buf_.append(p, end);
        line = line_buf_;
        line_in_buf_ = true;
    } else {
        line = std::string_view(p, end);
    }
    bytes.remove_prefix(consumed);
    return true;
}

bool SseParser::take_line(std::string_view line) {
    if (dispatched_) clear_event();
    if (line.empty()) {
        if (has_data_) {
            event_.id.assign(last_id_);
            return true;
        }
        event_.event.clear();  // a block without data dispatches nothing
        return false;
    }
    if (line.front() == ':') return false;  // comment / keep-alive
    std::string_view field = line;
    std::string_view value;
    if (bare_json_ && line.front() == '{') {
        field = "data";
        value = line;
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
        field = line.substr(0, colon);
        value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
        if (has_data_) {
            check_event(event_.data.size() + 1 + value.size());
            event_.data.push_back('\n');
            event_.data.append(value);
        } else {
            check_event(value.size());
            event_.data.assign(value);
            has_data_ = true;
        }
    } else if (field == "event") {
        event_.event.assign(value);
    } else if (field == "id") {
        if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
    } else if (field == "retry") {
        if (value.empty()) return false;
        std::uint64_t v = 0;
        for (char c : value) {
            if (c < '0' || c > '9') return false;
            const auto d = static_cast<std::uint64_t>(c - '0');
            if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
            v = v * 10 + d;
        }
        reconnect_ms_ = v;
        event_.retry = v;
    }
    // Unknown fields are ignored.
    return false;
}

bool SseParser::end_stream() {
    if (dispatched_) clear_event();
    if (line_in_buf_) {
        line_buf_.clear();
        line_in_buf_ = false;
    }
    if (!bom_done_ && bom_matched_ > 0) line_buf_.append(bom, bom_matched_);
    bom_done_ = true;
    pending_cr_ = false;
    if (!line_buf_.empty()) {
        std::string last = std::move(line_buf_);
        line_buf_.clear();
        take_line(last);  // a non-empty line never dispatches by itself
    }
    if (!has_data_) return false;
    event_.id.assign(last_id_);
    return true;
}

}  // namespace rath::net
