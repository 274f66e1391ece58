// LoopObserver: the model and tool calls of a run as a service's metrics see them.
#include "loop/loop_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/loop/observer.hpp>
#include <rath/loop/session_loop.hpp>

#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

using rath::Session;

namespace {

class Recorder : public rath::LoopObserver {
public:
    struct Model {
        std::string kind, model, outcome;
        std::int64_t prompt, completion;
    };
    struct Tool {
        std::string name, outcome;
    };
    void on_model_call(const rath::ModelCallRecord& r) override {
        std::lock_guard lk(mu);
        models.push_back({std::string(r.provider_kind), std::string(r.model), std::string(r.outcome), r.prompt_tokens,
                          r.completion_tokens});
        CHECK(r.duration.count() >= 0);
    }
    void on_tool_call(const rath::ToolCallRecord& r) override {
        std::lock_guard lk(mu);
        tools.push_back({std::string(r.name), std::string(r.outcome)});
    }
    std::mutex mu;
    std::vector<Model> models;
    std::vector<Tool> tools;
};

}  // namespace

TEST_SUITE("loop/observer") {

TEST_CASE("an observer sees each model call with its usage and each tool call with its outcome") {
    rath::test::TempDir dir;
    auto s = rath::test::scripted();
    s.client->push(rath::test::tool_calls({{"c1", "list_workspace_files", "{}"}, {"c2", "no_such_tool", "{}"}},
                                          rath::test::usage(10, 3)));
    s.client->push(rath::test::text("done", rath::test::usage(20, 4)));
    auto rec = std::make_shared<Recorder>();
    auto user = Session::from_user_message("look around");
    user.to("local", dir.path().string());
    Session out = rath::run_session_loop(user, Session::from_agent_prompt("agent"),
                                         {.provider = s.provider, .client = s.client, .observer = rec});
    CHECK(out.text() == std::optional<std::string>("done"));
    std::lock_guard lk(rec->mu);
    REQUIRE(rec->models.size() == 2);
    CHECK(rec->models[0].kind == "openai");
    CHECK(rec->models[0].model == *s.provider.model);
    CHECK(rec->models[0].outcome == "ok");
    CHECK(rec->models[0].prompt == 10);
    CHECK(rec->models[1].completion == 4);
    // The unknown tool never reaches a dispatch: only the real call is reported.
    REQUIRE(rec->tools.size() == 1);
    CHECK(rec->tools[0].name == "list_workspace_files");
    CHECK(rec->tools[0].outcome == "ok");
}

}  // TEST_SUITE
