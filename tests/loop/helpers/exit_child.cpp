// The child of the "exit with sessions in flight" test: starts many agent sessions on
// the default runtime (a few running, most queued at the agent's admission gate, all
// waiting on a slow fake LLM) and returns from main at once. The default runtime then
// drains and shuts down during static destruction, while its threads keep starting
// queued sessions: everything those touch must still be alive.
//
//   loop_exit_child SESSIONS MAX_RUNS LATENCY_MS
#include <rath/fake_llm/server.hpp>
#include <rath/flow.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

struct CountArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(CountArgs, (), (text))

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: loop_exit_child SESSIONS MAX_RUNS LATENCY_MS\n");
        return 2;
    }
    const int sessions = std::atoi(argv[1]);
    const int max_runs = std::atoi(argv[2]);
    // Never destroyed (and reachable, for leak checkers): the server answers until the
    // process is gone, so the sessions are still running, not failing, when main returns.
    static auto* server = new rath::fake_llm::Server({.latency = std::chrono::milliseconds(std::atoi(argv[3]))});
    server->start();

    rath::llm::Provider provider;
    provider.provider_kind = "openai";
    provider.base_url = server->base_url();
    provider.api_key = "sk-exit-test";
    provider.model = "fake-model";
    auto count = rath::tool::make_tool<CountArgs>(
        "word_count", "Count words.", [](rath::Session, CountArgs a) { return static_cast<long long>(a.text.size()); },
        {.parallel_safe = true});
    rath::flow::AgentOptions options;
    options.loop.provider = provider;
    options.loop.tools = {count};
    options.max_concurrent_runs = static_cast<std::size_t>(max_runs);
    rath::flow::Agent agent("Count the words.", std::move(options));

    std::vector<rath::Session> outs;
    for (int i = 0; i < sessions; ++i)
        outs.push_back(agent(rath::Session::from_user_message("session " + std::to_string(i) + " has five words")));
    // One finished session shows the setup works; the rest are in flight or queued.
    const auto text = outs.front().text();
    std::printf("first: %s\n", text.value_or("<none>").c_str());
    std::printf("returning with sessions in flight\n");
    std::fflush(stdout);
    return 0;
}
