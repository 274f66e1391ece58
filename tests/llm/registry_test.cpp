// Registry, provider resolution, scripted client, retry helper and usage meter (spec §2, §3, §6).
#include "loopback_server.hpp"
#include "support/env.hpp"

#include <rath/config/store.hpp>
#include <rath/async/block_on.hpp>
#include <rath/llm.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

namespace json = boost::json;
using namespace rath::llm;

TEST_CASE("resolve_credential returns the first non-blank candidate trimmed") {
    CHECK(resolve_credential({std::nullopt, std::string("  "), std::string(" key "), std::string("other")}) == "key");
    CHECK(resolve_credential({std::nullopt, std::string("")}) == "");
    rath::test::EnvGuard g({{"OPENAI_API_KEY", "   "}});
    CHECK_FALSE(env_value("OPENAI_API_KEY"));
}

TEST_CASE("registry dispatches built-in kinds and reports unknown ones") {
    rath::test::CleanEnv env;
    auto kinds = registered_kinds();
    for (const char* k : {"anthropic", "atlascloud", "fake", "litellm", "openai", "scripted"})
        CHECK(std::find(kinds.begin(), kinds.end(), k) != kinds.end());
    CHECK(std::is_sorted(kinds.begin(), kinds.end()));
    CHECK(chat_client_for(Provider{.api_key = "k-1234"})->kind() == "openai");
    CHECK(chat_client_for(Provider{.api_key = "k-1234", .provider_kind = "anthropic"})->kind() == "anthropic");
    CHECK_THROWS_WITH_AS(chat_client_for(Provider{.provider_kind = "nope"}),
                         doctest::Contains("unknown provider_kind='nope'; registered kinds: ["), rath::ProviderConfigError);
}

TEST_CASE("third-party kinds can be registered and dispatched") {
    register_chat_client("custom-test", [](const Provider& p, const ChatClientOptions& o) -> std::shared_ptr<ChatClient> {
        return std::make_shared<ScriptedChatClient>(p, o);
    });
    auto kinds = registered_kinds();
    CHECK(std::find(kinds.begin(), kinds.end(), "custom-test") != kinds.end());
    auto c = chat_client_for(Provider{.model = "x", .provider_kind = "custom-test"});
    CHECK(c->kind() == "scripted");
    CHECK(c->provider().model == "x");
}

TEST_CASE("atlascloud rewrites the provider onto the openai client") {
    rath::test::CleanEnv env;
    rath::test::EnvGuard g({{"ATLASCLOUD_API_KEY", "atlas-key"}});
    auto c = chat_client_for(Provider{.provider_kind = "atlascloud"});
    auto* o = dynamic_cast<OpenAIChatClient*>(c.get());
    REQUIRE(o);
    CHECK(o->provider().kind() == "openai");
    CHECK(o->base_url() == "https://api.atlascloud.ai/v1");
    CHECK(o->provider().model == "qwen/qwen3.5-flash");
}

TEST_CASE("the config tier supplies key url and model when nothing else does") {
    rath::test::CleanEnv env;
    rath::test::LoopbackServer server([](const rath::test::RecordedRequest&, int) {
        return rath::test::Reply::json(200, R"({"choices":[{"index":0,"message":{"content":"cfg"},"finish_reason":"stop"}]})");
    });
    {
        rath::config::ConfigStore store(env.path() / "config.json");
        store.set_llm_provider("main", {.provider_kind = "openai", .model = "cfg-model", .api_key = "cfg-key", .base_url = server.url("/v1")});
        store.set_default_llm_provider("main");
        store.save();
    }
    rath::async::Runtime rt({.threads = 1});
    OpenAIChatClient c(Provider{}, ChatClientOptions{.runtime = &rt});
    CHECK(c.complete(ChatRequest{.messages = {Message::user("q")}}).primary_choice().message.content == "cfg");
    auto req = server.requests().at(0);
    CHECK(req.header("Authorization") == "Bearer cfg-key");
    CHECK(json::parse(req.body).at("model") == "cfg-model");
    {
        rath::test::EnvGuard g({{"OPENAI_API_KEY", "env-key"}});
        OpenAIChatClient c2(Provider{.api_key = "explicit-key"}, ChatClientOptions{.runtime = &rt});
        c2.complete(ChatRequest{.messages = {Message::user("q")}});
        CHECK(server.requests().at(1).header("Authorization") == "Bearer explicit-key");
        OpenAIChatClient c3(Provider{}, ChatClientOptions{.runtime = &rt});
        c3.complete(ChatRequest{.messages = {Message::user("q")}});
        CHECK(server.requests().at(2).header("Authorization") == "Bearer env-key");
    }
    rt.shutdown();
}

TEST_CASE("provider from_config copies the entry and lets overrides win") {
    rath::test::CleanEnv env;
    auto store = std::make_shared<rath::config::ConfigStore>(env.path() / "config.json");
    store->set_llm_provider("a", {.provider_kind = "anthropic", .model = "claude", .api_key = "k", .base_url = "u",
                                  .temperature = 0.3, .max_tokens = 100});
    auto p = Provider::from_config("a", store, Provider{.model = "override"});
    CHECK(p.kind() == "anthropic");
    CHECK(p.model == "override");
    CHECK(p.api_key == "k");
    CHECK(p.temperature == 0.3);
    CHECK(p.max_tokens == 100);
    CHECK_THROWS_WITH_AS(Provider::from_config(std::nullopt, store), doctest::Contains("no LLM provider name given"),
                         rath::config::ConfigLookupError);
    CHECK_THROWS_WITH_AS(Provider::from_config("zzz", store), doctest::Contains("available: ['a']"),
                         rath::config::ConfigLookupError);
    CHECK(Provider{}.to_string() == "(no model)");
}

TEST_CASE("provider sampling fields fill unset request fields") {
    Provider p{.temperature = 0.2, .max_tokens = 9, .tool_choice = json::value("auto"), .extra_create_args = json::object{{"x", 1}}};
    ChatRequest r{.temperature = 0.9};
    p.apply_to(r);
    CHECK(r.temperature == 0.9);
    CHECK(r.max_tokens == 9);
    CHECK(r.tool_choice == json::value("auto"));
    CHECK(r.extra_create_args.at("x").as_int64() == 1);
}

TEST_CASE("scripted client replays queued replies and rules and records requests") {
    rath::async::Runtime rt({.threads = 1});
    ScriptedChatClient c(Provider{.model = "s"}, ChatClientOptions{.runtime = &rt});
    c.push(ScriptedReply::text("first"));
    ScriptedReply weather = ScriptedReply::tool_call("t1", "weather", R"({"city":"Paris"})");
    weather.when_last_contains = "weather";
    c.rule(weather);
    CHECK(c.complete(ChatRequest{.messages = {Message::user("hi")}}).primary_choice().message.content == "first");
    auto r = c.complete(ChatRequest{.messages = {Message::user("what is the weather")}});
    CHECK(r.primary_choice().message.tool_calls->at(0).function.arguments_parsed->at("city") == "Paris");
    std::string streamed;
    auto s = c.stream(ChatRequest{.messages = {Message::user("weather again")}}, [&](const StreamDelta& d) {
        if (d.tool_call_name_delta) streamed += *d.tool_call_name_delta;
    });
    CHECK(streamed == "weather");
    CHECK(s.primary_choice().finish_reason == FinishReason::tool_calls);
    CHECK_THROWS_WITH_AS(c.complete(ChatRequest{.messages = {Message::user("unmatched")}}),
                         doctest::Contains("no scripted reply matches the last message: unmatched"), rath::ProviderConfigError);
    CHECK(c.requests().size() == 4);
    CHECK(c.pending() == 0);
    c.push(ScriptedReply{.deltas = {{.content_delta = "par"}, {.content_delta = "tial"}},
                         .error = std::make_exception_ptr(rath::StreamError(rath::ProviderErrorInfo{.message = "boom"}))});
    std::string got;
    CHECK_THROWS_AS(c.stream(ChatRequest{.messages = {Message::user("x")}}, [&](const StreamDelta& d) { got += d.content_delta.value_or(""); }),
                    rath::StreamError);
    CHECK(got == "partial");
    auto named = chat_client_for(Provider{.model = "shared-script", .provider_kind = "fake"});
    CHECK(named.get() == ScriptedChatClient::named("shared-script").get());
    rt.shutdown();
}

TEST_CASE("retry helper follows the schedule and rethrows the last error") {
    std::vector<double> sleeps;
    RetryOptions o{.max_attempts = 4, .base_seconds = 0.1, .jitter = false,
                   .sleep = [&](std::chrono::duration<double> d) -> boost::asio::awaitable<void> {
                       sleeps.push_back(d.count());
                       co_return;
                   }};
    int calls = 0;
    auto failing = [&]() -> boost::asio::awaitable<int> {
        ++calls;
        throw rath::RateLimitError(rath::ProviderErrorInfo{.status = 429, .message = "n" + std::to_string(calls)});
        co_return 0;
    };
    try {
        rath::async::block_on(async_retry_with_backoff<int>(failing, o));
        FAIL("no exception");
    } catch (const rath::RateLimitError& e) {
        CHECK(e.provider_message() == "n4");
    }
    CHECK(calls == 4);
    CHECK(sleeps == std::vector<double>{0.1, 0.2, 0.4});
    sleeps.clear();
    calls = 0;
    auto bad = [&]() -> boost::asio::awaitable<int> {
        ++calls;
        throw rath::BadRequestError(rath::ProviderErrorInfo{.status = 400});
        co_return 0;
    };
    CHECK_THROWS_AS(rath::async::block_on(async_retry_with_backoff<int>(bad, o)), rath::BadRequestError);
    CHECK(calls == 1);
    CHECK(sleeps.empty());
    o.max_attempts = 0;  // clamped to one attempt
    calls = 0;
    CHECK_THROWS_AS(rath::async::block_on(async_retry_with_backoff<int>(failing, o)), rath::RateLimitError);
    CHECK(calls == 1);
    int n = 0;
    o.max_attempts = 3;
    auto flaky = [&]() -> boost::asio::awaitable<int> {
        if (++n < 3) throw rath::ProviderConnectionError(rath::ProviderErrorInfo{.message = "reset"});
        co_return 42;
    };
    CHECK(rath::async::block_on(async_retry_with_backoff<int>(flaky, o)) == 42);
}

TEST_CASE("usage meter trips the budget once when the total crosses it") {
    int fired = 0;
    std::string sid;
    Provider p{.budget_total_tokens = 100, .on_budget_exceeded = [&](std::string_view s, const TokenUsage& u) {
                   ++fired;
                   sid = s;
                   CHECK(u.total_tokens == 120);
               }};
    UsageMeter m(p, "sess-1");
    CHECK_FALSE(m.add(std::nullopt));
    CHECK_FALSE(m.add(TokenUsage{.prompt_tokens = 50, .completion_tokens = 50, .total_tokens = 100}));
    CHECK(m.add(TokenUsage{.prompt_tokens = 10, .completion_tokens = 10, .total_tokens = 20}));
    CHECK_FALSE(m.add(TokenUsage{.prompt_tokens = 1, .completion_tokens = 1, .total_tokens = 2}));
    CHECK(fired == 1);
    CHECK(sid == "sess-1");
    CHECK(m.total_tokens() == 122);
    Provider thrower{.budget_total_tokens = 1, .on_budget_exceeded = [](std::string_view, const TokenUsage&) {
                         throw rath::BudgetExceededError("over budget");
                     }};
    UsageMeter m2(thrower, "s2");
    CHECK_THROWS_AS(m2.add(TokenUsage{.total_tokens = 5}), rath::BudgetExceededError);
}
