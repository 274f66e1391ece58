// SseParser: every fixture stream split at every byte position must give the same
// events as a whole-buffer parse, plus one case per WHATWG framing rule.
#include <rath/net/sse.hpp>

#include "support/files.hpp"
#include "support/fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using rath::net::SseEvent;
using rath::net::SseParser;
using rath::test::fixtures_dir;
using rath::test::read_file;

namespace {

std::vector<std::filesystem::path> sse_fixtures() {
    std::vector<std::filesystem::path> out;
    const auto root = fixtures_dir() / "wire";
    if (!std::filesystem::exists(root)) return out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
        if (e.is_regular_file() && e.path().extension() == ".sse") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

bool same(const SseEvent& a, const SseEvent& b) {
    return a.event == b.event && a.data == b.data && a.id == b.id && a.retry == b.retry;
}

// Whole-buffer parse, including the end-of-stream dispatch.
std::vector<SseEvent> parse_whole(std::string_view bytes) {
    std::vector<SseEvent> out;
    SseParser p;
    auto sink = [&](SseEvent& e) { out.push_back(e); };
    p.feed(bytes, sink);
    p.finish(sink);
    return out;
}

// Parses `bytes` fed as the given pieces and compares on the fly with `expected`.
bool parse_matches(std::string_view bytes, const std::vector<std::size_t>& cuts, const std::vector<SseEvent>& expected) {
    SseParser p;
    std::size_t i = 0;
    bool ok = true;
    auto sink = [&](SseEvent& e) {
        if (i >= expected.size() || !same(e, expected[i])) ok = false;
        ++i;
    };
    std::size_t pos = 0;
    for (std::size_t cut : cuts) {
        p.feed(bytes.substr(pos, cut - pos), sink);
        pos = cut;
    }
    p.feed(bytes.substr(pos), sink);
    p.finish(sink);
    return ok && i == expected.size();
}

// An independent, deliberately naive reading of the same rules (LF / CRLF input),
// used as a cross-check of the whole-buffer parse on the real fixtures.
std::vector<SseEvent> naive_parse(const std::string& text) {
    std::vector<SseEvent> out;
    SseEvent cur;
    bool has_data = false;
    std::string last_id;
    std::istringstream in(text);
    std::string line;
    auto dispatch = [&] {
        if (has_data) {
            cur.id = last_id;
            out.push_back(cur);
        }
        cur = {};
        has_data = false;
    };
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) {
            dispatch();
            continue;
        }
        if (line[0] == ':') continue;
        auto colon = line.find(':');
        std::string field = line.substr(0, colon);
        std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "data") {
            cur.data += (has_data ? "\n" : "") + value;
            has_data = true;
        } else if (field == "event") {
            cur.event = value;
        } else if (field == "id") {
            last_id = value;
        }
    }
    dispatch();
    return out;
}

std::string replace_lf(const std::string& s, std::string_view with) {
    std::string out;
    for (char c : s) {
        if (c == '\n') out.append(with);
        else out.push_back(c);
    }
    return out;
}

}  // namespace

TEST_CASE("every fixture stream parses the same when split at every byte position") {
    const auto files = sse_fixtures();
    REQUIRE_MESSAGE(!files.empty(), "no .sse fixtures under " << fixtures_dir());
    for (const auto& f : files) {
        CAPTURE(f.string());
        const std::string lf = read_file(f);
        const auto expected = parse_whole(lf);
        CHECK(!expected.empty());
        const auto reference = naive_parse(lf);
        REQUIRE(reference.size() == expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) CHECK(same(reference[i], expected[i]));

        for (const std::string& variant : {lf, replace_lf(lf, "\r\n")}) {
            for (std::size_t cut = 0; cut <= variant.size(); ++cut) {
                if (!parse_matches(variant, {cut}, expected)) {
                    FAIL_CHECK("mismatch when split at byte " << cut << " (crlf=" << (variant.size() != lf.size()) << ")");
                    break;
                }
            }
        }
        for (const std::string& variant : {lf, replace_lf(lf, "\r\n"), replace_lf(lf, "\r")}) {
            std::vector<std::size_t> every;
            for (std::size_t i = 1; i < variant.size(); ++i) every.push_back(i);
            CHECK(parse_matches(variant, every, expected));
            CHECK(parse_matches(variant, {}, expected));
        }
    }
}

TEST_CASE("the fixtures carry the framing features the providers rely on") {
    const auto root = fixtures_dir() / "wire";
    auto events = [&](const char* rel) { return parse_whole(read_file(root / rel)); };
    auto openrouter = events("gateways/openrouter/stream_processing_comments_midstream_error.sse");
    REQUIRE(!openrouter.empty());
    CHECK(openrouter.front().data.rfind("{\"id\":\"gen-", 0) == 0);  // the 17 comment lines are skipped
    auto anthropic = events("anthropic/messages_stream_text_ping.sse");
    REQUIRE(!anthropic.empty());
    CHECK(anthropic.front().event == "message_start");
    CHECK(anthropic.back().event == "message_stop");  // unterminated last event, dispatched by finish()
    auto openai = events("openai/chat_stream_text_usage.sse");
    CHECK(openai.back().data == "[DONE]");
}

TEST_CASE("data lines are joined with line feeds and the event name is kept") {
    auto ev = parse_whole("event: delta\ndata: one\ndata:two\ndata\n\n");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].event == "delta");
    CHECK(ev[0].data == "one\ntwo\n");
}

TEST_CASE("only a single leading space after the colon is stripped") {
    auto ev = parse_whole("data:  two spaces\n\ndata:none\n\n");
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].data == " two spaces");
    CHECK(ev[1].data == "none");
}

TEST_CASE("comment lines are ignored anywhere in the stream") {
    auto ev = parse_whole(": keep-alive\n\ndata: a\n: mid-event comment\ndata: b\n\n:\n\n");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].data == "a\nb");
}

TEST_CASE("CR and LF and CRLF line endings are all accepted") {
    auto ev = parse_whole("data: a\r\rdata: b\r\n\r\ndata: c\n\ndata: d\r\n\n");
    REQUIRE(ev.size() == 4);
    CHECK(ev[0].data == "a");
    CHECK(ev[1].data == "b");
    CHECK(ev[2].data == "c");
    CHECK(ev[3].data == "d");
}

TEST_CASE("a CR ending one feed and an LF starting the next are one line ending") {
    SseParser p;
    std::vector<std::string> got;
    auto sink = [&](SseEvent& e) { got.push_back(e.data); };
    p.feed("data: x\r", sink);
    p.feed("\ndata: y\r", sink);
    p.feed("\n\r", sink);
    p.feed("\n", sink);
    REQUIRE(got.size() == 1);
    CHECK(got[0] == "x\ny");
    // A lone CR at the end of a feed followed by a non-LF byte is still one line ending.
    p.feed("data: z\r", sink);
    p.feed("\r", sink);
    REQUIRE(got.size() == 2);
    CHECK(got[1] == "z");
}

TEST_CASE("a leading UTF-8 byte order mark is skipped even when split") {
    SseParser p;
    std::vector<std::string> got;
    auto sink = [&](SseEvent& e) { got.push_back(e.data); };
    p.feed("\xEF", sink);
    p.feed("\xBB", sink);
    p.feed("\xBF" "data: x\n\n", sink);
    REQUIRE(got.size() == 1);
    CHECK(got[0] == "x");
    // Only the first one: a second BOM is part of the field name (an unknown field).
    auto ev = parse_whole("\xEF\xBB\xBF\xEF\xBB\xBF" "data: y\n\ndata: z\n\n");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].data == "z");
}

TEST_CASE("a field without a colon has an empty value") {
    auto ev = parse_whole("data\n\nevent\ndata: x\n\n");
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].data == "");
    CHECK(ev[1].event == "");
    CHECK(ev[1].data == "x");
}

TEST_CASE("blocks without data dispatch nothing and reset the event name") {
    auto ev = parse_whole("event: ping\n\ndata: x\n\n");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].event == "");
}

TEST_CASE("the last event id persists across events and ignores values with NUL") {
    SseParser p;
    std::vector<SseEvent> got;
    auto sink = [&](SseEvent& e) { got.push_back(e); };
    p.feed("id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", sink);
    p.feed(std::string_view("id: bad\0id\ndata: d\n\n", 20), sink);
    REQUIRE(got.size() == 4);
    CHECK(got[0].id == "7");
    CHECK(got[1].id == "7");
    CHECK(got[2].id == "");
    CHECK(got[3].id == "");
    CHECK(p.last_event_id() == "");
    p.feed("id: 42\n\n", sink);
    CHECK(p.last_event_id() == "42");
}

TEST_CASE("retry accepts only ASCII digits") {
    SseParser p;
    std::vector<SseEvent> got;
    auto sink = [&](SseEvent& e) { got.push_back(e); };
    p.feed("retry: 1500\ndata: a\n\nretry: 12x\ndata: b\n\nretry:\ndata: c\n\nretry: 99999999999999999999999\ndata: d\n\n", sink);
    REQUIRE(got.size() == 4);
    CHECK(got[0].retry == 1500u);
    CHECK(!got[1].retry);
    CHECK(!got[2].retry);
    CHECK(!got[3].retry);
    CHECK(p.reconnection_time() == 1500u);
}

TEST_CASE("unknown fields are ignored") {
    auto ev = parse_whole("foo: bar\ndata: x\nDATA: y\n\n");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].data == "x");
}

TEST_CASE("finish dispatches an unterminated event only when it has data") {
    SseParser p;
    std::vector<std::string> got;
    auto sink = [&](SseEvent& e) { got.push_back(e.data); };
    p.feed("data: a\n\ndata: tail", sink);
    CHECK(got.size() == 1);
    p.finish(sink);
    REQUIRE(got.size() == 2);
    CHECK(got[1] == "tail");
    p.feed("event: only\n", sink);
    p.finish(sink);
    CHECK(got.size() == 2);
}

TEST_CASE("the callback may move the data out of the event") {
    SseParser p;
    std::vector<std::string> got;
    p.feed("data: first\n\ndata: second\n\n", [&](SseEvent& e) { got.push_back(std::move(e.data)); });
    REQUIRE(got.size() == 2);
    CHECK(got[0] == "first");
    CHECK(got[1] == "second");
}

TEST_CASE("a line longer than the limit is rejected with a typed error") {
    SseParser p(64);
    auto sink = [](SseEvent&) {};
    CHECK_THROWS_AS(p.feed(std::string(100, 'x'), sink), rath::net::SseError);
    p.reset();
    CHECK_THROWS_AS(p.feed("data: " + std::string(40, 'a') + "\ndata: " + std::string(40, 'b') + "\n", sink),
                    rath::net::SseError);
    p.reset();
    std::vector<std::string> got;
    p.feed("data: ok\n\n", [&](SseEvent& e) { got.push_back(e.data); });
    CHECK(got == std::vector<std::string>{"ok"});
}

TEST_CASE("an exception thrown by the callback propagates and reset recovers the parser") {
    SseParser p;
    CHECK_THROWS_AS(p.feed("data: a\n\ndata: b\n\n", [](SseEvent&) { throw std::runtime_error("stop"); }),
                    std::runtime_error);
    p.reset();
    std::vector<std::string> got;
    p.feed("data: c\n\n", [&](SseEvent& e) { got.push_back(e.data); });
    CHECK(got == std::vector<std::string>{"c"});
}

TEST_CASE("bare JSON lines are data lines only when the execd dialect is on") {
    const std::string body = "{\"type\":\"stdout\",\"text\":\"a:b\"}\n\n{\"type\":\"ping\"}\n{\"type\":\"init\"}\n\ndata: {\"x\":1}\n\n";
    std::vector<std::string> plain, bare;
    SseParser p;
    p.feed(body, [&](SseEvent& e) { plain.push_back(e.data); });
    p.finish([&](SseEvent& e) { plain.push_back(e.data); });
    CHECK(plain == std::vector<std::string>{"{\"x\":1}"});
    SseParser q;
    q.accept_bare_json_lines(true);
    for (char c : body) q.feed(std::string_view(&c, 1), [&](SseEvent& e) { bare.push_back(e.data); });
    q.finish([&](SseEvent& e) { bare.push_back(e.data); });
    CHECK(bare == std::vector<std::string>{"{\"type\":\"stdout\",\"text\":\"a:b\"}", "{\"type\":\"ping\"}\n{\"type\":\"init\"}",
                                           "{\"x\":1}"});
}
