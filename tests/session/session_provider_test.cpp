// Session::to(Provider): the provider binding (session.md §9).
#include "support/env.hpp"
#include "support/files.hpp"

#include <rath/config/store.hpp>
#include <rath/llm/provider.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/writer.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace rath;

namespace {
llm::Provider provider_for(std::string model, std::string key = "sk-bound-secret") {
    llm::Provider p;
    p.model = std::move(model);
    p.api_key = std::move(key);
    return p;
}
}  // namespace

TEST_SUITE("session/provider") {

TEST_CASE("a new session has no provider and binding one is visible through every handle") {
    Session s = Session::from_user_message("hi");
    CHECK(s.provider() == nullptr);
    Session same = s;
    CHECK(&s.to(provider_for("m1")) == &s);
    REQUIRE(same.provider() != nullptr);
    CHECK(same.provider()->model == std::optional<std::string>("m1"));
    s.clear_provider();
    CHECK(same.provider() == nullptr);
}

TEST_CASE("binding a provider opens no sandbox and leaves the sandbox target alone, and to(backend) leaves the provider") {
    Session s = Session::from_user_message("hi");
    s.to("local", "/work/space");
    s.to(provider_for("m1"));
    CHECK(s.sandbox() == nullptr);
    CHECK(s.sandbox_backend() == std::optional<std::string>("local"));
    REQUIRE(s.sandbox_spec());
    CHECK(s.sandbox_spec()->working_dir == std::optional<std::string>("/work/space"));
    s.to("local");
    REQUIRE(s.provider() != nullptr);
    CHECK(s.provider()->model == std::optional<std::string>("m1"));
}

TEST_CASE("fork and detach keep the provider and merge keeps the left session's") {
    Session a = Session::from_user_message("a");
    Session b = Session::from_user_message("b");
    a.to(provider_for("left"));
    b.to(provider_for("right"));
    CHECK(a.fork().provider()->model == std::optional<std::string>("left"));
    CHECK(a.detach().provider()->model == std::optional<std::string>("left"));
    CHECK(a.merge(b).provider()->model == std::optional<std::string>("left"));
    CHECK(b.merge(a).provider()->model == std::optional<std::string>("right"));
    CHECK(Session::from_user_message("c").merge(a).provider() == nullptr);
}

TEST_CASE("rebinding a parent's provider does not change a fork's") {
    Session a = Session::from_user_message("a");
    a.to(provider_for("first"));
    Session f = a.fork();
    a.to(provider_for("second"));
    CHECK(f.provider()->model == std::optional<std::string>("first"));
    CHECK(a.provider()->model == std::optional<std::string>("second"));
}

TEST_CASE("to_provider binds the named config preset") {
    rath::test::CleanEnv env;
    config::ConfigStore::clear_cache();
    config::ConfigStore store(env.path() / "config.json");
    store.set_llm_provider("preset", {.model = "preset-model", .api_key = "preset-key", .base_url = "http://preset"});
    store.save();
    Session s = Session::from_user_message("hi");
    s.to_provider("preset");
    REQUIRE(s.provider() != nullptr);
    CHECK(s.provider()->model == std::optional<std::string>("preset-model"));
    CHECK(s.provider()->api_key == std::optional<std::string>("preset-key"));
    CHECK(s.provider()->base_url == std::optional<std::string>("http://preset"));
    CHECK_THROWS_WITH(s.to_provider("absent"), doctest::Contains("'absent' not found"));
    CHECK(s.provider()->model == std::optional<std::string>("preset-model"));  // a failed lookup binds nothing
    config::ConfigStore::clear_cache();
}

TEST_CASE("the provider is never written to a persisted session file") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    s.to(provider_for("persisted-model-name", "sk-never-on-disk"));
    persistence::SessionWriter w(s);
    w.close();
    const std::string text = rath::test::read_file(w.path());
    CHECK_FALSE(text.empty());
    CHECK(text.find("sk-never-on-disk") == std::string::npos);
    CHECK(text.find("persisted-model-name") == std::string::npos);
    CHECK(text.find("provider") == std::string::npos);
}

}  // TEST_SUITE
