// What a process keeps of the sessions it served once their handles are dropped:
// nothing that grows with their number. The registry, the keyed lanes, the tool-policy
// table and the agent's admission queue return to their baseline sizes, while a held
// output still exports its lineage.
#include <rath/async/runtime.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/flow.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/session/graph.hpp>
#include <rath/session/registry.hpp>
#include <rath/tool/policy.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace flow = rath::flow;
using rath::Session;

namespace {

struct CountArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(CountArgs, (), (text))

std::string words_of(long i) { return "please count the words of session " + std::to_string(i); }

// An agent with the fan-out workload's word_count tool against rath-fake-llm (fan-out
// mode: the model calls the tool, then answers "done: <count>").
flow::Agent counting_agent(const rath::fake_llm::Server& server) {
    rath::llm::Provider provider;
    provider.base_url = server.base_url();
    provider.api_key = "sk-fake-local";
    provider.model = "fake-model";
    auto word_count = rath::tool::make_tool<CountArgs>(
        "word_count", "Count the whitespace-separated words in a text.",
        [](Session, CountArgs args) {
            std::istringstream in(args.text);
            long n = 0;
            for (std::string w; in >> w;) ++n;
            return n;
        },
        {.parallel_safe = true, .blocking = false});
    flow::AgentOptions options;
    options.loop.provider = provider;
    options.loop.tools = {word_count};
    options.max_concurrent_runs = 64;
    return flow::Agent("You count words.", std::move(options));
}

struct Sizes {
    std::size_t registry = 0, registry_slots = 0, lanes = 0, policies = 0;
};
Sizes sizes_now() {
    return {rath::session_registry().size(), rath::session_registry().capacity(),
            rath::async::Runtime::default_runtime().strands().size(), rath::tool::tool_policy_count()};
}

// The sizes once the runtime has run what the last completions left behind (a loop's
// last references go on an io thread just after the output settles).
Sizes settled_sizes() {
    Sizes last = sizes_now();
    for (int stable = 0, i = 0; stable < 5 && i < 500; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        Sizes now = sizes_now();
        stable = (now.registry == last.registry && now.lanes == last.lanes && now.policies == last.policies) ? stable + 1 : 0;
        last = now;
    }
    return last;
}

// Runs `n` sessions through `agent` at once, each input carrying a tool policy, and
// returns the inputs and the outputs once all are done.
std::pair<std::vector<Session>, std::vector<Session>> run_all(flow::Agent& agent, long n) {
    std::vector<Session> ins, outs;
    ins.reserve(static_cast<std::size_t>(n));
    outs.reserve(static_cast<std::size_t>(n));
    std::mutex mu;
    std::condition_variable cv;
    long left = n;
    for (long i = 0; i < n; ++i) {
        Session in = Session::from_user_message(words_of(i));
        rath::tool::set_tool_policy(in, rath::tool::ToolPolicy{.allow_tools = std::set<std::string>{"word_count"}});
        Session out = agent(in);
        out.when_ready([&] {
            std::lock_guard lk(mu);
            if (--left == 0) cv.notify_all();
        });
        ins.push_back(std::move(in));
        outs.push_back(std::move(out));
    }
    std::unique_lock lk(mu);
    REQUIRE(cv.wait_for(lk, std::chrono::seconds(120), [&] { return left == 0; }));
    return {std::move(ins), std::move(outs)};
}

}  // namespace

TEST_CASE("2,000 agent runs leave no registry entries, lanes or tool policies once their sessions are dropped") {
    rath::fake_llm::Server server;
    server.start();
    flow::Agent agent = counting_agent(server);
    // One run first: the agent's own session and the client's connection are made once.
    (void)run_all(agent, 1);
    const Sizes before = settled_sizes();
    constexpr long n = 2000;
    {
        auto [ins, outs] = run_all(agent, n);
        for (long i = 0; i < n; ++i)
            CHECK(outs[static_cast<std::size_t>(i)].text() == "done: " + std::to_string(7));
        const Sizes held = sizes_now();
        // Each run registers its input and its output at least.
        CHECK(held.registry >= before.registry + 2 * n);
        CHECK(held.policies == before.policies + n);
    }
    const Sizes after = settled_sizes();
    CHECK(after.registry == before.registry);
    CHECK(after.registry_slots <= std::max<std::size_t>(before.registry_slots, 64));
    CHECK(after.lanes == before.lanes);
    CHECK(after.policies == before.policies);
    REQUIRE(agent->admission());
    CHECK(agent->admission()->waiting() == 0);
}

TEST_CASE("a finished run's lineage exports while its output is held, after its input is dropped") {
    rath::fake_llm::Server server;
    server.start();
    flow::Agent agent = counting_agent(server);
    (void)run_all(agent, 1);
    const std::size_t before = settled_sizes().registry;
    std::string in_id;
    std::optional<Session> out;
    {
        Session in = Session::from_user_message(words_of(3));
        in_id = in.id();
        out = agent(in);
    }
    out->synchronize();
    CHECK(out->text() == "done: 7");
    // The run's coroutine lets go of its input just after it publishes the output, on an
    // io thread: the entry goes soon after the output is readable, not at the same instant.
    bool dropped = false;
    for (int i = 0; i < 500 && !dropped; ++i) {
        dropped = !rath::session_registry().get(in_id).has_value();
        if (!dropped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(dropped);
    const auto view = rath::lineage::lineage_view(*out);
    REQUIRE(view.parent_session_ids.size() == 2);
    CHECK(view.parent_session_ids[0] == in_id);
    std::string jsonl = rath::lineage::export_jsonl_string({*out});
    auto row = boost::json::parse(jsonl.substr(0, jsonl.find('\n'))).as_object();
    CHECK(row.at("id").as_string() == out->id());
    CHECK(row.at("parent_session_ids").as_array().at(0).as_string() == in_id);
    CHECK(row.at("chunk_count").as_int64() > 0);
    out.reset();
    CHECK(settled_sizes().registry == before);
}
