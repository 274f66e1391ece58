// The chat clients under the HTTP client's memory caps and content encodings: what
// goes wrong is a ProviderError a caller can catch (ResponseTooLargeError,
// ResponseFormatError), never retried; a gzip answer, whole or streamed, just works.
#include "loopback_server.hpp"
#include "support/env.hpp"
#include "support/gzip.hpp"

#include <rath/async.hpp>
#include <rath/llm.hpp>

#include <doctest/doctest.h>

using namespace rath::llm;
using rath::test::LoopbackServer;
using rath::test::RecordedRequest;
using rath::test::Reply;

namespace {

std::string openai_text_body(const std::string& text) {
    return R"({"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":")" +
           text + R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}})";
}

std::string openai_stream(std::initializer_list<std::string> words, bool done = true) {
    std::string s;
    for (const auto& w : words)
        s += "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + w + "\"},\"finish_reason\":null}]}\n\n";
    if (!done) return s;
    s += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    return s + "data: [DONE]\n\n";
}

struct Fixture {
    rath::test::CleanEnv env;
    rath::async::Runtime rt{{.threads = 2}};
    ChatClientOptions options(rath::net::HttpClientOptions http = {}) {
        return ChatClientOptions{.runtime = &rt,
                                 .http_options = http,
                                 .retry_jitter = false,
                                 .sleep = [](std::chrono::duration<double>) -> boost::asio::awaitable<void> { co_return; }};
    }
    ~Fixture() { rt.shutdown(); }
};

ChatRequest hello() { return ChatRequest{.messages = {Message::user("hello")}}; }
const DeltaCallback stream_only = [](const StreamDelta&) {};

Provider provider_at(const LoopbackServer& s) {
    return Provider{.base_url = s.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01};
}

}  // namespace

TEST_CASE("an SSE line beyond the client's cap is a ResponseTooLargeError caught as a ProviderError and not retried") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::sse("data: " + std::string(64 * 1024, 'x'), 4096);
    });
    OpenAIChatClient c(provider_at(server), f.options({.max_sse_line_bytes = 16 * 1024}));
    try {
        c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::ProviderError& e) {
        CHECK(dynamic_cast<const rath::ResponseTooLargeError*>(&e) != nullptr);
        CHECK(e.type() == "sse_line_too_large");
        CHECK(e.status() == 200);
        CHECK_FALSE(e.retryable());
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("an SSE event beyond the client's cap after some deltas keeps the partial answer") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        std::string big;
        for (int i = 0; i < 64; ++i) big += "data: " + std::string(1000, 'y') + "\n";
        return Reply::sse(openai_stream({"so", " far"}, false) + big, 4096);
    });
    OpenAIChatClient c(provider_at(server), f.options({.max_sse_event_bytes = 32 * 1024}));
    try {
        c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::ResponseTooLargeError& e) {
        CHECK(e.type() == "sse_event_too_large");
        REQUIRE(e.partial());
        CHECK(e.partial()->primary_choice().message.content == "so far");
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("a body beyond the client's cap is a ResponseTooLargeError with type body_too_large, not retried") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body(std::string(100'000, 'z'))); });
    OpenAIChatClient c(provider_at(server), f.options({.max_body_bytes = 10'000}));
    try {
        (void)c.complete(hello());
        FAIL("no exception");
    } catch (const rath::ResponseTooLargeError& e) {
        CHECK(e.type() == "body_too_large");
        CHECK_FALSE(e.retryable());
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("an unsupported content encoding is a ResponseFormatError, not retried") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        Reply r = Reply::json(200, "\x1b\x03\x00\xf8 not brotli really");
        r.headers.emplace_back("Content-Encoding", "br");
        return r;
    });
    OpenAIChatClient c(provider_at(server), f.options());
    try {
        (void)c.complete(hello());
        FAIL("no exception");
    } catch (const rath::ResponseFormatError& e) {
        CHECK(e.type() == "unsupported_encoding");
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("gzip answers, whole and streamed, are decoded for the chat client") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest& req, int) {
        Reply r = req.body.find("\"stream\":true") != std::string::npos
                      ? Reply::sse(rath::test::gzip(openai_stream({"hel", "lo"})), 50)
                      : Reply::json(200, rath::test::gzip(openai_text_body("whole")));
        r.headers.emplace_back("Content-Encoding", "gzip");
        return r;
    });
    OpenAIChatClient c(provider_at(server), f.options());
    CHECK(c.complete(hello()).primary_choice().message.content == "whole");
    CHECK(c.complete(hello(), stream_only).primary_choice().message.content == "hello");
    CHECK(server.requests()[0].header("accept-encoding") == "gzip");
}

TEST_CASE("a binary body where JSON was expected is quoted escaped and shortened in the error") {
    Fixture f;
    std::string garbage;
    for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 37) & 0xff));
    std::string line_garbage;  // the same without line breaks, for one SSE data line
    for (int i = 1; i <= 300; ++i) {
        const char b = static_cast<char>((i * 37) & 0xff);
        line_garbage.push_back(b == '\n' || b == '\r' ? '\x01' : b);
    }
    LoopbackServer server([&](const RecordedRequest& req, int) {
        if (req.body.find("\"stream\":true") != std::string::npos) return Reply::sse("data: " + line_garbage + "\n\n");
        return Reply::json(req.target.find("bad") != std::string::npos ? 502 : 200, garbage);
    });
    auto check_quoted = [&](const std::string& what) {
        CHECK(what.find("\\x00") != std::string::npos);
        CHECK(what.find("bytes)") != std::string::npos);
        CHECK(what.size() < 1200);
        for (char c : what) CHECK(static_cast<unsigned char>(c) != 0x1b);
    };
    OpenAIChatClient c(provider_at(server), f.options());
    try {
        (void)c.complete(hello());
        FAIL("no exception");
    } catch (const rath::ResponseFormatError& e) {
        check_quoted(e.what());
    }
    try {
        (void)c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::ResponseFormatError& e) {
        CHECK(std::string(e.what()).find("\\x") != std::string::npos);
        CHECK(std::string(e.what()).find("(300 bytes)") != std::string::npos);
    }
    Provider bad = provider_at(server);
    bad.base_url = server.url() + "/bad";
    bad.retry_max_attempts = 1;
    OpenAIChatClient c2(bad, f.options());
    try {
        (void)c2.complete(hello());
        FAIL("no exception");
    } catch (const rath::ProviderError& e) {
        CHECK(e.status() == 502);
        check_quoted(e.provider_message());
    }
}
