// The HTTP clients against a loopback server: headers and URLs, retries with
// Retry-After, and the failure modes of a stream (spec §4.1, §5.1, §6.1).
#include "loopback_server.hpp"
#include "support/env.hpp"
#include "support/log_capture.hpp"

#include <rath/llm.hpp>
#include <rath/testing/scripted_client.hpp>

#include <rath/async/block_on.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <atomic>
#include <mutex>

namespace json = boost::json;
using namespace rath::llm;
using rath::testing::ScriptedChatClient;
using rath::testing::ScriptedReply;
using rath::test::LoopbackServer;
using rath::test::RecordedRequest;
using rath::test::Reply;

namespace {

const char* secret_key = "sk-live-SECRET-0123456789abcdef";

std::string openai_text_body(const std::string& text) {
    return R"({"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":")" +
           text + R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}})";
}

std::string openai_stream(std::initializer_list<std::string> words, bool done = true) {
    std::string s;
    for (const auto& w : words)
        s += "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + w + "\"},\"finish_reason\":null}]}\n\n";
    if (done) {
        s += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        s += "data: [DONE]\n\n";
    }
    return s;
}

struct SleepRecorder {
    std::mutex mu;
    std::vector<double> delays;
    SleepFn fn() {
        return [this](std::chrono::duration<double> d) -> boost::asio::awaitable<void> {
            std::lock_guard lk(mu);
            delays.push_back(d.count());
            co_return;
        };
    }
};

struct Fixture {
    rath::test::CleanEnv env;
    rath::async::Runtime rt{{.threads = 2}};
    SleepRecorder sleeps;
    ChatClientOptions options(rath::net::HttpClientOptions http = {}) {
        return ChatClientOptions{.runtime = &rt, .http_options = http, .retry_jitter = false, .sleep = sleeps.fn()};
    }
    ~Fixture() { rt.shutdown(); }
};

ChatRequest hello() { return ChatRequest{.messages = {Message::user("hello")}}; }

// A callback that asks for the streamed form and ignores the deltas.
const DeltaCallback stream_only = [](const StreamDelta&) {};

}  // namespace

TEST_CASE("openai client posts the exact body with bearer auth to base url plus chat completions") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body("pong")); });
    OpenAIChatClient c(Provider{.base_url = server.url("/v1/"), .api_key = secret_key, .model = "gpt-x"}, f.options());
    auto r = c.complete(hello());
    CHECK(r.primary_choice().message.content == "pong");
    CHECK(r.usage->total_tokens == 5);
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].method == "POST");
    CHECK(reqs[0].target == "/v1/chat/completions");
    CHECK(reqs[0].header("Authorization") == std::string("Bearer ") + secret_key);
    CHECK(reqs[0].header("Content-Type") == "application/json");
    CHECK(json::parse(reqs[0].body) == json::parse(R"({"model":"gpt-x","messages":[{"role":"user","content":"hello"}],"stream":false})"));
}

TEST_CASE("the http clients encode the request when the call starts, so it may go before the answer arrives") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest& r, int) {
        if (r.target == "/v1/messages")
            return Reply::json(200, R"({"id":"m","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn"})");
        return Reply::json(200, openai_text_body("pong"));
    });
    OpenAIChatClient o(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "m"}, f.options());
    AnthropicChatClient a(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "c"}, f.options());
    ChatResponse out1, out2;
    auto call = [](ChatClient& c, ChatResponse& out) {
        std::optional<ChatRequest> req = hello();
        auto op = c.async_complete(*req, out);
        req.reset();  // the body was encoded at the call
        return op;
    };
    auto op1 = call(o, out1);
    auto op2 = call(a, out2);
    rath::async::block_on(f.rt, std::move(op1));
    rath::async::block_on(f.rt, std::move(op2));
    CHECK(out1.primary_choice().message.content == "pong");
    CHECK(out2.primary_choice().message.content == "a");
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(json::parse(reqs[0].body).at("messages") == json::parse(R"([{"role":"user","content":"hello"}])"));
    CHECK(json::parse(reqs[1].body).at("messages") == json::parse(R"([{"role":"user","content":"hello"}])"));
}

TEST_CASE("async_complete writes the answer into the caller's response, streamed or not, replacing what it held") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest& r, int) {
        if (r.target == "/v1/messages") {
            if (r.body.find("\"stream\":true") != std::string::npos)
                return Reply::sse("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m2\",\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n"
                                  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\n"
                                  "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"
                                  "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
            return Reply::json(200, R"({"id":"m","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn"})");
        }
        if (r.body.find("\"stream\":true") != std::string::npos) return Reply::sse(openai_stream({"st", "ream"}));
        return Reply::json(200, openai_text_body("pong"));
    });
    OpenAIChatClient o(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "m"}, f.options());
    AnthropicChatClient a(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "c"}, f.options());
    ScriptedChatClient scripted;
    scripted.push(ScriptedReply::text("hello"));
    auto into = [&](ChatClient& c, bool stream) {
        ChatResponse out;
        out.id = "stale";
        out.usage = rath::llm::TokenUsage{.prompt_tokens = 99, .completion_tokens = 99, .total_tokens = 198};
        std::vector<std::string> deltas;
        DeltaCallback on_delta = [&](const StreamDelta& d) {
            if (d.content_delta) deltas.push_back(*d.content_delta);
        };
        ChatRequest req = hello();
        rath::async::block_on(f.rt, c.async_complete(req, out, stream ? &on_delta : nullptr));
        CHECK(out.id != "stale");
        return std::pair{out, deltas};
    };
    auto [r1, d1] = into(o, false);
    CHECK(r1.primary_choice().message.content == "pong");
    CHECK(r1.usage->total_tokens == 5);
    auto [r2, d2] = into(o, true);
    CHECK(r2.primary_choice().message.content == "stream");
    CHECK(d2 == std::vector<std::string>{"st", "ream"});
    CHECK(!r2.usage);  // the stale usage is gone: the whole response was replaced
    auto [r3, d3] = into(a, false);
    CHECK(r3.primary_choice().message.content == "a");
    auto [r4, d4] = into(a, true);
    CHECK(r4.primary_choice().message.content == "b");
    CHECK(d4 == std::vector<std::string>{"b"});
    // A client of another kind, through the same entry point.
    auto [r5, d5] = into(scripted, false);
    CHECK(r5.primary_choice().message.content == "hello");
}

TEST_CASE("async_complete reports a failure at the await and a bad request before anything is sent") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(400, R"({"error":{"message":"bad thing","type":"invalid_request_error"}})");
    });
    OpenAIChatClient o(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "m"}, f.options());
    ChatResponse out;
    ChatRequest req = hello();
    CHECK_THROWS_AS(rath::async::block_on(f.rt, o.async_complete(req, out)), rath::BadRequestError);
    CHECK(server.requests().size() == 1);
    OpenAIChatClient no_model(Provider{.base_url = server.url("/v1"), .api_key = secret_key}, f.options());
    auto op = no_model.async_complete(req, out);  // the preparation error waits for the await
    CHECK_THROWS_AS(rath::async::block_on(f.rt, std::move(op)), rath::ProviderConfigError);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("extra_headers override the client's constant headers and organization and project headers are sent") {
    Fixture f;
    rath::test::EnvGuard g({{"OPENAI_ORG_ID", "org-1"}, {"OPENAI_PROJECT_ID", "proj-2"}});
    LoopbackServer server([](const RecordedRequest& r, int) {
        if (r.target == "/v1/messages")
            return Reply::json(200, R"({"id":"m","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn"})");
        return Reply::json(200, openai_text_body("h"));
    });
    OpenAIChatClient c(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "m"}, f.options());
    c.complete(hello());
    ChatRequest custom = hello();
    custom.sampling.extra_create_args = json::parse(R"({"extra_headers":{"accept":"application/x-test","X-Trace":"t"}})").as_object();
    c.complete(custom);
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].header("OpenAI-Organization") == "org-1");
    CHECK(reqs[0].header("OpenAI-Project") == "proj-2");
    CHECK(reqs[0].header("Accept") == "application/json");
    CHECK(reqs[1].header("Accept") == "application/x-test");  // replaced, not sent twice
    CHECK(reqs[1].header("X-Trace") == "t");
    CHECK(reqs[1].header("Authorization") == std::string("Bearer ") + secret_key);
    CHECK(reqs[1].header("OpenAI-Organization") == "org-1");
    AnthropicChatClient a(Provider{.base_url = server.url(), .api_key = secret_key, .model = "claude-x"}, f.options());
    ChatRequest custom_a = hello();
    custom_a.sampling.extra_create_args = json::parse(R"({"extra_headers":{"anthropic-version":"2099-01-01"}})").as_object();
    CHECK(a.complete(custom_a).primary_choice().message.content == "a");
    CHECK(server.requests().at(2).header("anthropic-version") == "2099-01-01");
    CHECK(server.requests().at(2).header("x-api-key") == secret_key);
}

TEST_CASE("a key containing a line break is a config error at construction and is not echoed") {
    Fixture f;
    CHECK_THROWS_AS(OpenAIChatClient(Provider{.base_url = "http://127.0.0.1:9", .api_key = "sk-a\r\nX: y"}, f.options()),
                    rath::ProviderConfigError);
    try {
        AnthropicChatClient(Provider{.base_url = "http://127.0.0.1:9", .api_key = "sk-a\nX: y"}, f.options());
        FAIL("expected a ProviderConfigError");
    } catch (const rath::ProviderConfigError& e) {
        CHECK(std::string(e.what()).find("sk-a") == std::string::npos);
    }
}

TEST_CASE("legacy azure endpoints use deployments api-version and the api-key header") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body("az")); });
    // A loopback address cannot end in .azure.com, so the routing is checked on the URL
    // builder and the transport on a plain endpoint.
    rath::test::EnvGuard g({{"AZURE_OPENAI_API_VERSION", "2025-01-01"}, {"AZURE_OPENAI_API_KEY", "azure-key-123"}});
    OpenAIChatClient az(Provider{.base_url = "https://example.openai.azure.com/openai"}, f.options());
    CHECK(az.is_azure());
    CHECK(az.is_legacy_azure());
    CHECK(az.chat_url("gpt4o") ==
          "https://example.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2025-01-01");
    OpenAIChatClient v1(Provider{.base_url = "https://example.openai.azure.com/openai/v1"}, f.options());
    CHECK(v1.is_azure());
    CHECK_FALSE(v1.is_legacy_azure());
    CHECK(v1.chat_url("m") == "https://example.openai.azure.com/openai/v1/chat/completions");
}

TEST_CASE("azure endpoints prefer azure keys and other endpoints prefer OPENAI_API_KEY") {
    Fixture f;
    rath::test::EnvGuard g({{"OPENAI_API_KEY", "openai-key"}, {"AZURE_OPENAI_API_KEY", "azure-key"}});
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body("k")); });
    OpenAIChatClient plain(Provider{.base_url = server.url("/v1"), .model = "m"}, f.options());
    plain.complete(hello());
    CHECK(server.requests().at(0).header("Authorization") == "Bearer openai-key");
    rath::test::EnvGuard g2({{"OPENAI_API_KEY", nullptr}});
    OpenAIChatClient fallback(Provider{.base_url = server.url("/v1"), .model = "m"}, f.options());
    fallback.complete(hello());
    CHECK(server.requests().at(1).header("Authorization") == "Bearer azure-key");
}

TEST_CASE("missing key and missing model are reported before any request") {
    Fixture f;
    CHECK_THROWS_WITH_AS(OpenAIChatClient(Provider{.base_url = "http://127.0.0.1:9"}, f.options()),
                         doctest::Contains("No API key found"), rath::ProviderConfigError);
    CHECK_THROWS_WITH_AS(AnthropicChatClient(Provider{}, f.options()), doctest::Contains("No Anthropic api_key found"),
                         rath::ProviderConfigError);
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body("x")); });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234"}, f.options());
    CHECK_THROWS_WITH_AS(c.complete(hello()), doctest::Contains("model is required"), rath::ProviderConfigError);
    CHECK(server.request_count() == 0);
    // The coroutine forms report it when awaited, not when the awaitable is made.
    ChatRequest req = hello();
    ChatResponse out;
    auto pending = c.async_complete(req, out);
    CHECK_THROWS_WITH_AS(rath::async::block_on(f.rt, std::move(pending)), doctest::Contains("model is required"),
                         rath::ProviderConfigError);
    AnthropicChatClient a(Provider{.base_url = server.url(), .api_key = "k-1234"}, f.options());
    auto pending_anthropic = a.async_complete(req, out);
    CHECK_THROWS_AS(rath::async::block_on(f.rt, std::move(pending_anthropic)), rath::ProviderConfigError);
    auto pending_stream = c.async_complete(req, out, &stream_only);
    CHECK_THROWS_WITH_AS(rath::async::block_on(f.rt, std::move(pending_stream)),
                         doctest::Contains("model is required"), rath::ProviderConfigError);
    CHECK(server.request_count() == 0);
}

TEST_CASE("the default model chain uses OPENAI_DEFAULT_MODEL only when no model is set") {
    Fixture f;
    rath::test::EnvGuard g({{"OPENAI_DEFAULT_MODEL", "  env-model  "}});
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, openai_text_body("x")); });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234"}, f.options());
    c.complete(hello());
    CHECK(json::parse(server.requests().at(0).body).at("model") == "env-model");
    ChatRequest r = hello();
    r.model = "req-model";
    c.complete(r);
    CHECK(json::parse(server.requests().at(1).body).at("model") == "req-model");
}

TEST_CASE("a 429 with Retry-After is retried after the server-mandated delay") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int i) {
        if (i == 0) {
            Reply r = Reply::json(429, R"({"error":{"type":"rate_limit_error","message":"slow down"}})");
            r.headers.emplace_back("Retry-After", "2");
            return r;
        }
        return Reply::json(200, openai_text_body("after wait"));
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = secret_key, .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    auto r = c.complete(hello());
    CHECK(r.primary_choice().message.content == "after wait");
    CHECK(server.request_count() == 2);
    REQUIRE(f.sleeps.delays.size() == 1);
    CHECK(f.sleeps.delays[0] == doctest::Approx(2.0));
}

TEST_CASE("a 500 is retried with exponential backoff and a 400 is not retried") {
    Fixture f;
    std::atomic<int> mode{0};
    LoopbackServer server([&](const RecordedRequest&, int i) {
        if (mode == 0) return i < 2 ? Reply::json(500, R"({"error":{"message":"oops","type":"server_error"}})")
                                    : Reply::json(200, openai_text_body("ok"));
        return Reply::json(400, R"({"error":{"message":"bad","type":"invalid_request_error"}})");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.1},
                       f.options());
    CHECK(c.complete(hello()).primary_choice().message.content == "ok");
    CHECK(f.sleeps.delays == std::vector<double>{0.1, 0.2});
    mode = 1;
    f.sleeps.delays.clear();
    CHECK_THROWS_AS(c.complete(hello()), rath::BadRequestError);
    CHECK(f.sleeps.delays.empty());
    CHECK(server.request_count() == 4);
}

TEST_CASE("zero retry attempts still make one attempt") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(503, R"({"error":{"message":"unavailable","type":"server_error"}})");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_max_attempts = 0},
                       f.options());
    CHECK_THROWS_AS(c.complete(hello()), rath::InternalServerError);
    CHECK(server.request_count() == 1);
    CHECK(f.sleeps.delays.empty());
}

TEST_CASE("a refused connection is retried, and the last attempt's error is what the caller gets") {
    Fixture f;
    OpenAIChatClient c(Provider{.base_url = "http://127.0.0.1:9/v1", .api_key = "k-1234", .model = "m",
                                .retry_max_attempts = 3, .retry_base_seconds = 0.01},
                       f.options());
    CHECK_THROWS_AS(c.complete(hello()), rath::ProviderConnectionError);
    CHECK(f.sleeps.delays == std::vector<double>{0.01, 0.02});
}

TEST_CASE("retries give up after retry_max_attempts and rethrow the last error") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(503, R"({"error":{"message":"unavailable","type":"server_error"}})");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_max_attempts = 3,
                                .retry_base_seconds = 0.1},
                       f.options());
    try {
        c.complete(hello());
        FAIL("no exception");
    } catch (const rath::InternalServerError& e) {
        CHECK(e.status() == 503);
        CHECK(e.provider_message() == "unavailable");
    }
    CHECK(server.request_count() == 3);
    CHECK(f.sleeps.delays.size() == 2);
}

TEST_CASE("errors never contain the api key even when the provider echoes it") {
    Fixture f;
    rath::test::LogCapture log;
    LoopbackServer server([](const RecordedRequest& req, int i) {
        std::string key = req.header("Authorization").value_or("");
        if (i == 0) return Reply::json(500, R"({"error":{"message":"upstream saw )" + key + R"(","type":"server_error"}})");
        return Reply::json(401, R"({"error":{"message":"Incorrect API key provided: )" + key + R"(","type":"invalid_request_error","code":"invalid_api_key"}})");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = secret_key, .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    try {
        c.complete(hello());
        FAIL("no exception");
    } catch (const rath::AuthenticationError& e) {
        CHECK(std::string(e.what()).find(secret_key) == std::string::npos);
        CHECK(e.provider_message().find(secret_key) == std::string::npos);
        CHECK(e.provider_message().find("***") != std::string::npos);
        CHECK(e.type() == "invalid_request_error");
        CHECK(e.info().code == "invalid_api_key");
    }
    auto logged = log.entries();
    CHECK_FALSE(logged.empty());
    for (const auto& l : logged) CHECK(l.message.find(secret_key) == std::string::npos);
    CHECK(c.provider().to_string() == "m");
}

TEST_CASE("model not found errors quote the provider message") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(404, R"({"error":{"code":"model_not_found","message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error"}})");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "gpt-9"}, f.options());
    CHECK_THROWS_WITH_AS(c.complete(hello()), doctest::Contains("The model `gpt-9` does not exist"), rath::ModelNotFoundError);
    CHECK(server.request_count() == 1);
}

TEST_CASE("streams deliver every delta to the callback and fold them") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::sse(openai_stream({"a", "b", "c"}), 5); });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m"}, f.options());
    std::string seen;
    auto r = c.complete(hello(), [&](const StreamDelta& d) {
        if (d.content_delta) seen += *d.content_delta;
    });
    CHECK(seen == "abc");
    CHECK(r.primary_choice().message.content == "abc");
    CHECK(r.primary_choice().finish_reason == FinishReason::stop);
    auto body = json::parse(server.requests().at(0).body);
    CHECK(body.at("stream").as_bool());
    CHECK(body.at("stream_options").at("include_usage").as_bool());
}

TEST_CASE("a stream open that fails with 500 is retried and the content is not duplicated") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int i) {
        if (i == 0) return Reply::json(500, R"({"error":{"message":"warming up"}})");
        return Reply::sse(openai_stream({"x", "y"}));
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    std::string seen;
    auto r = c.complete(hello(), [&](const StreamDelta& d) { seen += d.content_delta.value_or(""); });
    CHECK(seen == "xy");
    CHECK(r.primary_choice().message.content == "xy");
    CHECK(server.request_count() == 2);
}

TEST_CASE("a connection reset mid-body after deltas is not retried and keeps the partial response") {
    Fixture f;
    const std::string body = openai_stream({"first", "second"});
    const std::size_t cut = body.find("second") + 2;
    LoopbackServer server([&](const RecordedRequest&, int) {
        Reply r = Reply::sse(body, 9);
        r.reset_after = cut;
        return r;
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    std::string seen;
    try {
        c.complete(hello(), [&](const StreamDelta& d) { seen += d.content_delta.value_or(""); });
        FAIL("no exception");
    } catch (const rath::ProviderConnectionError& e) {
        REQUIRE(e.partial());
        CHECK(e.partial()->primary_choice().message.content == "first");
        CHECK(e.partial()->primary_choice().finish_reason == FinishReason::error);
    }
    CHECK(seen == "first");
    CHECK(server.request_count() == 1);
}

TEST_CASE("a connection reset before any delta is retried") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int i) {
        Reply r = Reply::sse(openai_stream({"ok"}));
        if (i == 0) r.reset_after = 3;  // inside the first "data:" line: no delta yet
        return r;
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    auto r = c.complete(hello(), stream_only);
    CHECK(r.primary_choice().message.content == "ok");
    CHECK(server.request_count() == 2);
}

TEST_CASE("a truncated stream without done or finish is a typed error with the partial text") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::sse(openai_stream({"par", "tial"}, false)); });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    try {
        c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::ProviderConnectionError& e) {
        CHECK(e.type() == "incomplete_stream");
        CHECK(e.partial()->primary_choice().message.content == "partial");
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("a stream that ends after its finish reason without done succeeds") {
    Fixture f;
    std::string body = openai_stream({"fine"});
    body = body.substr(0, body.find("data: [DONE]"));
    LoopbackServer server([&](const RecordedRequest&, int) { return Reply::sse(body); });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m"}, f.options());
    CHECK(c.complete(hello(), stream_only).primary_choice().message.content == "fine");
}

TEST_CASE("an in-stream error event surfaces as a stream error and is not retried") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::sse(openai_stream({"so far"}, false) + "event: error\ndata: {\"error\":{\"message\":\"model crashed\",\"type\":\"server_error\"}}\n\n");
    });
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options());
    try {
        c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::StreamError& e) {
        CHECK(e.status() == 200);
        CHECK(e.type() == "server_error");
        CHECK(e.provider_message() == "model crashed");
        CHECK(e.partial()->primary_choice().message.content == "so far");
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("a stream that stalls past the read deadline fails with a timeout instead of hanging") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        Reply r = Reply::sse(openai_stream({"one", "two"}, false));
        r.piece = r.body.find("two") - 20;
        r.piece_delay = std::chrono::milliseconds(5000);
        return r;
    });
    rath::net::HttpClientOptions http{.read_timeout = std::chrono::milliseconds(300)};
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_base_seconds = 0.01},
                       f.options(http));
    try {
        c.complete(hello(), stream_only);
        FAIL("no exception");
    } catch (const rath::ProviderTimeoutError& e) {
        REQUIRE(e.partial());
        CHECK(e.partial()->primary_choice().message.content == "one");
    }
    CHECK(server.request_count() == 1);
}

TEST_CASE("a slow drip of keep-alive comments is cut by the request timeout") {
    Fixture f;
    std::string drip;
    for (int i = 0; i < 200; ++i) drip += ": keep-alive\n\n";
    LoopbackServer server([&](const RecordedRequest&, int) {
        Reply r = Reply::sse(drip, 14);
        r.piece_delay = std::chrono::milliseconds(50);
        return r;
    });
    ChatRequest req = hello();
    req.sampling.extra_create_args = json::object{{"timeout", 0.5}};
    OpenAIChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m", .retry_max_attempts = 1},
                       f.options());
    CHECK_THROWS_AS(c.complete(req, stream_only), rath::ProviderTimeoutError);
}

TEST_CASE("anthropic client sends x-api-key and version headers to v1 messages") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(200, R"({"id":"msg","model":"claude","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}})");
    });
    AnthropicChatClient c(Provider{.base_url = server.url(), .api_key = secret_key, .model = "claude-x"}, f.options());
    auto r = c.complete(ChatRequest{.messages = {Message::system("s1"), Message::system("s2"), Message::user("q")}});
    CHECK(r.primary_choice().message.content == "a\nb");
    CHECK(r.usage->total_tokens == 7);
    auto req = server.requests().at(0);
    CHECK(req.target == "/v1/messages");
    CHECK(req.header("x-api-key") == secret_key);
    CHECK(req.header("anthropic-version") == "2023-06-01");
    CHECK_FALSE(req.header("Authorization"));
    auto body = json::parse(req.body);
    CHECK(body.at("system") == "s1\n\ns2");
    CHECK(body.at("max_tokens").as_int64() == 4096);
    AnthropicChatClient v1(Provider{.base_url = server.url("/v1"), .api_key = secret_key, .model = "claude-x"}, f.options());
    v1.complete(hello());
    CHECK(server.requests().at(1).target == "/v1/messages");
}

TEST_CASE("anthropic stream open is retried on 429 and usage is read from message events") {
    Fixture f;
    const std::string sse =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    LoopbackServer server([&](const RecordedRequest&, int i) {
        if (i == 0) return Reply::json(429, R"({"type":"error","error":{"type":"rate_limit_error","message":"wait"}})");
        return Reply::sse(sse, 11);
    });
    AnthropicChatClient c(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "claude", .retry_base_seconds = 0.01},
                          f.options());
    auto r = c.complete(hello(), stream_only);
    CHECK(r.primary_choice().message.content == "Hi");
    CHECK(r.primary_choice().finish_reason == FinishReason::stop);
    REQUIRE(r.usage);
    CHECK(r.usage->prompt_tokens == 10);
    CHECK(r.usage->completion_tokens == 7);
    CHECK(r.usage->total_tokens == 17);
    CHECK(server.request_count() == 2);
    CHECK(json::parse(server.requests().at(1).body).at("stream").as_bool());
}

TEST_CASE("concurrent coroutine calls share one client") {
    Fixture f;
    LoopbackServer server([](const RecordedRequest& req, int) {
        auto body = json::parse(req.body);
        std::string q(body.at("messages").at(0).at("content").as_string());
        return Reply::json(200, openai_text_body("re:" + q));
    });
    auto c = std::make_shared<OpenAIChatClient>(Provider{.base_url = server.url(), .api_key = "k-1234", .model = "m"},
                                                f.options());
    auto one = [](std::shared_ptr<OpenAIChatClient> client, int i) -> boost::asio::awaitable<ChatResponse> {
        ChatRequest req{.messages = {Message::user(std::to_string(i))}};
        ChatResponse out;
        co_await client->async_complete(req, out);
        co_return out;
    };
    std::vector<rath::async::Lazy<ChatResponse>> futures;
    for (int i = 0; i < 8; ++i) futures.push_back(f.rt.submit(one(c, i)));
    for (int i = 0; i < 8; ++i) CHECK(futures[i].get().primary_choice().message.content == "re:" + std::to_string(i));
}
