// 08 — compress: an agent turn, then a Compressor rewrites the transcript into a
// single USER row (the context for the next step costs fewer tokens).
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>

#include <cstdio>

int main() {
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "conversation transcript"},
         "respond": {"text": "User wants a plan for a C++ agent runtime; assistant proposed coroutines, strands and lazy sessions."}},
        {"match": {"role": "user"},
         "respond": {"text": "Build it on C++20 coroutines over Boost.Asio, serialize each sandbox through a strand, and return sessions as lazy futures so plain loops fan out."}}
    ]})");

    rath::flow::Agent agent("You are a systems architect. Answer in one paragraph.",
                            {.loop = {.provider = llm.provider, .on_event = example::stream_to_stdout()}});
    rath::flow::Compressor compressor(rath::default_compress_instruction,
                                      {.provider = llm.provider, .on_event = example::stream_to_stdout()});

    rath::Session turn = agent(rath::Session::from_user_message("How would you build a fast agent runtime in C++?"));
    std::printf("\n--- chunks before compression: %zu\n", turn.chunks().size());
    rath::Session small = compressor(turn);
    auto rows = small.chunks();
    std::printf("\n--- chunks after compression: %zu\n", rows.size());
    return rows.size() == 1 ? 0 : 1;
}
