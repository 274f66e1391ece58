// 07 — streaming: a hand-written on_event callback sees every delta (text, tool-call
// fragments, the finish reason, usage) while the loop still stores one atomic
// assistant row per round.
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>

#include <cstdio>
#include <string>

int main() {
    auto llm = example::make_llm(R"({"responses": [
        {"text": "Streams arrive as many small deltas, but the transcript keeps one row per turn."}
    ]})");

    std::string finish;
    int deltas = 0;
    rath::flow::Agent agent("Answer in one sentence.",
                            {.loop = {.provider = llm.provider, .on_event = [&](const rath::llm::StreamDelta& d) {
                                          ++deltas;
                                          if (d.content_delta) {
                                              std::fputs(d.content_delta->c_str(), stdout);
                                              std::fflush(stdout);
                                          }
                                          if (d.finish_reason) finish = std::string(rath::llm::to_string(*d.finish_reason));
                                      }}});

    rath::Session out = agent(rath::Session::from_user_message("How does streaming work here?"));
    auto chunks = out.chunks();  // waits for the loop
    std::printf("\n[finish_reason=%s]\n", finish.c_str());
    if (auto u = out.usage())
        std::printf("--- usage total=%lld (prompt=%lld, completion=%lld)\n", static_cast<long long>(u->total_tokens),
                    static_cast<long long>(u->prompt_tokens), static_cast<long long>(u->completion_tokens));
    std::printf("--- %d deltas streamed, %zu rows in the transcript\n", deltas, chunks.size());
    return chunks.size() == 2 ? 0 : 1;
}
