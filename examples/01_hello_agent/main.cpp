// 01 — the smallest agent program: one Agent, one user Session, one call.
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>

#include <cstdio>

int main() {
    auto llm = example::make_llm(R"({"responses": [
        {"text": "Rath is a C++ runtime where sessions flow through agents the way tensors flow through layers."}
    ]})");

    rath::flow::Agent agent("You are a concise assistant. Answer in one sentence.",
                            {.loop = {.provider = llm.provider, .on_event = example::stream_to_stdout()}});

    auto user = rath::Session::from_user_message("What is rath, in one sentence?");
    user.to("local");  // where tools would run (an ephemeral workspace, opened on first use)

    rath::Session out = agent(user);  // returns at once: `out` is pending
    auto usage = out.usage();         // reading waits for the loop to finish
    std::printf("\n");
    if (usage) std::printf("--- tokens: total=%lld\n", static_cast<long long>(usage->total_tokens));
    return out.text() ? 0 : 1;
}
