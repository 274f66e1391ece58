// The operators' provider when they are given none: the user session's (session.md §9).
#include "loop/loop_support.hpp"

#include <rath/flow/selector.hpp>
#include <rath/llm/registry.hpp>
#include <rath/loop/session_compress.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/registry.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using rath::Session;

namespace {

// A scripted client reachable through provider_kind `kind`, so that only a provider
// naming that kind (the session's) can reach it.
rath::test::Scripted scripted_kind(const std::string& kind) {
    auto s = rath::test::scripted();
    rath::llm::register_chat_client(kind, [client = s.client](const rath::llm::Provider&,
                                                              const rath::llm::ChatClientOptions&) {
        return std::static_pointer_cast<rath::llm::ChatClient>(client);
    });
    s.provider.provider_kind = kind;
    return s;
}

const char* const no_provider_loop =
    "no provider for run_session_loop: pass agent_provider=Provider(...) or bind one on the session via "
    "session.to(Provider(...))";

}  // namespace

TEST_SUITE("loop/session_provider") {

TEST_CASE("a loop given no provider runs with the user session's") {
    auto s = scripted_kind("session-provider-loop");
    s.client->push(rath::test::text("from the bound provider"));
    Session user = Session::from_user_message("hi");
    user.to(s.provider);
    Session out = rath::run_session_loop(user, Session::from_agent_prompt("agent"), rath::LoopOptions{});
    CHECK(out.text() == std::optional<std::string>("from the bound provider"));
    CHECK(s.client->requests().size() == 1);  // only the session's provider_kind reaches this client
}

TEST_CASE("a provider given to the loop wins over the session's") {
    auto bound = scripted_kind("session-provider-loser");
    auto given = scripted_kind("session-provider-winner");
    given.client->push(rath::test::text("explicit"));
    Session user = Session::from_user_message("hi");
    user.to(bound.provider);
    Session out = rath::run_session_loop(user, Session::from_agent_prompt("agent"), {.provider = given.provider});
    CHECK(out.text() == std::optional<std::string>("explicit"));
    CHECK(bound.client->requests().empty());
}

TEST_CASE("a loop with no provider anywhere fails before it makes an output session") {
    const auto before = rath::session_registry().size();
    CHECK_THROWS_WITH_AS(rath::run_session_loop(Session::from_user_message("hi"), Session::from_agent_prompt("a")),
                         no_provider_loop, std::invalid_argument);
    CHECK(rath::session_registry().size() == before);
}

TEST_CASE("compress and select_session also fall back to the session's provider and fail without one") {
    auto s = scripted_kind("session-provider-compress");
    s.client->push(rath::test::text("the short version"));
    s.client->push(rath::test::text("1"));
    Session user = Session::from_user_message("a long conversation");
    user.to(s.provider);
    Session agent = Session::from_agent_prompt("compress");
    Session out = rath::run_session_compress(user, agent, {});
    REQUIRE(out.chunks().size() == 1);
    CHECK(out.chunks()[0]->payload().at("content").as_string() == "the short version");
    auto [idx, desc] = rath::flow::select_session(user, agent, {"first", "second"}, rath::llm::Provider{});
    CHECK(idx == 1);
    CHECK(desc == "second");

    Session bare = Session::from_user_message("no provider");
    CHECK_THROWS_WITH_AS(rath::run_session_compress(bare, agent, {}),
                         doctest::Contains("no provider for run_session_compress: pass agent_provider="),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(rath::flow::select_session(bare, agent, {"first"}, rath::llm::Provider{}),
                         doctest::Contains("no provider for select_session: pass agent_provider="),
                         std::invalid_argument);
    // No candidates: nothing to ask, so no provider is needed.
    CHECK(rath::flow::select_session(bare, agent, {}, rath::llm::Provider{}).first == -1);
}

}  // TEST_SUITE
