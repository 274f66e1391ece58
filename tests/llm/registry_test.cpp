// Registry, provider resolution, scripted client, retry helper and usage meter (spec §2, §3, §6).
#include "loopback_server.hpp"
#include "support/env.hpp"

#include <rath/config/store.hpp>
#include <rath/async/block_on.hpp>
#include <rath/llm.hpp>
#include <rath/testing/scripted_client.hpp>

#include "lib/llm/exchange.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

namespace json = boost::json;
using namespace rath::llm;
using rath::testing::ScriptedChatClient;
using rath::testing::ScriptedReply;

TEST_CASE("resolve_credential returns the first non-blank candidate trimmed") {
    CHECK(resolve_credential({std::nullopt, std::string("  "), std::string(" key "), std::string("other")}) == "key");
    CHECK(resolve_credential({std::nullopt, std::string("")}) == "");
    rath::test::EnvGuard g({{"OPENAI_API_KEY", "   "}});
    CHECK_FALSE(env_value("OPENAI_API_KEY"));
}

TEST_CASE("registry dispatches built-in kinds and reports unknown ones") {
    rath::test::CleanEnv env;
    auto kinds = registered_kinds();
    for (const char* k : {"anthropic", "atlascloud", "litellm", "openai"})
        CHECK(std::find(kinds.begin(), kinds.end(), k) != kinds.end());
    // The scripted test double lives in rath::testing and is no built-in kind.
    for (const char* k : {"scripted", "fake"}) CHECK(std::find(kinds.begin(), kinds.end(), k) == kinds.end());
    CHECK_THROWS_WITH_AS(chat_client_for(Provider{.provider_kind = "scripted"}),
                         doctest::Contains("unknown provider_kind='scripted'"), rath::ProviderConfigError);
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
    // The factory decides what is handed out, e.g. one client shared by every lookup.
    auto shared = std::make_shared<ScriptedChatClient>(Provider{.model = "shared-script"});
    register_chat_client("custom-shared", [shared](const Provider&, const ChatClientOptions&) {
        return std::static_pointer_cast<ChatClient>(shared);
    });
    CHECK(chat_client_for(Provider{.provider_kind = "custom-shared"}).get() == shared.get());
    CHECK(chat_client_for(Provider{.model = "other", .provider_kind = "custom-shared"}).get() == shared.get());
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
    CHECK(p.sampling.temperature == 0.3);
    CHECK(p.sampling.max_tokens == 100);
    CHECK_THROWS_WITH_AS(Provider::from_config(std::nullopt, store), doctest::Contains("no LLM provider name given"),
                         rath::config::ConfigLookupError);
    CHECK_THROWS_WITH_AS(Provider::from_config("zzz", store), doctest::Contains("available: ['a']"),
                         rath::config::ConfigLookupError);
    CHECK(Provider{}.to_string() == "(no model)");
}

TEST_CASE("provider sampling fields fill unset request fields") {
    Provider p{.sampling = {.tool_choice = json::value("auto"), .temperature = 0.2, .max_tokens = 9, .extra_create_args = json::object{{"x", 1}}}};
    ChatRequest r{.sampling = {.temperature = 0.9}};
    p.apply_to(r);
    CHECK(r.sampling.temperature == 0.9);
    CHECK(r.sampling.max_tokens == 9);
    CHECK(r.sampling.tool_choice == json::value("auto"));
    CHECK(r.sampling.extra_create_args.at("x").as_int64() == 1);
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
    auto s = c.complete(ChatRequest{.messages = {Message::user("weather again")}}, [&](const StreamDelta& d) {
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
    CHECK_THROWS_AS(c.complete(ChatRequest{.messages = {Message::user("x")}}, [&](const StreamDelta& d) { got += d.content_delta.value_or(""); }),
                    rath::StreamError);
    CHECK(got == "partial");
    rt.shutdown();
}

TEST_CASE("the retry decision follows the schedule, honours Retry-After within its bound and refuses the rest") {
    const rath::net::RetryPolicy policy{.max_attempts = 4,
                                        .base = std::chrono::duration<double>(0.1),
                                        .cap = std::chrono::duration<double>(30),
                                        .jitter = false,
                                        .max_retry_after = std::chrono::duration<double>(60)};
    auto decide = [&](int attempt, auto error) { return detail::retry_decision(policy, attempt, std::make_exception_ptr(error)); };
    const rath::RateLimitError limited(rath::ProviderErrorInfo{.status = 429});
    CHECK(decide(1, limited)->count() == doctest::Approx(0.1));
    CHECK(decide(2, limited)->count() == doctest::Approx(0.2));
    CHECK(decide(3, limited)->count() == doctest::Approx(0.4));
    CHECK(decide(1, rath::ProviderConnectionError(rath::ProviderErrorInfo{.message = "reset"})));
    CHECK_FALSE(decide(1, rath::BadRequestError(rath::ProviderErrorInfo{.status = 400})));
    CHECK_FALSE(decide(1, std::runtime_error("not a provider error")));
    // A server-mandated delay replaces the schedule up to the bound; a longer one does not.
    const rath::RateLimitError wait_2s(rath::ProviderErrorInfo{.status = 429, .retry_after = std::chrono::duration<double>(2)});
    CHECK(decide(1, wait_2s)->count() == doctest::Approx(2.0));
    const rath::RateLimitError wait_long(
        rath::ProviderErrorInfo{.status = 429, .retry_after = std::chrono::duration<double>(600)});
    CHECK(decide(1, wait_long)->count() == doctest::Approx(0.1));
    // x-should-retry: false wins over a retryable status.
    CHECK_FALSE(decide(1, rath::InternalServerError(rath::ProviderErrorInfo{.status = 500, .should_retry = false})));
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
