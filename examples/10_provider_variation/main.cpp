// 10 — provider variation: the same agent through an OpenAI-compatible provider and
// through Anthropic's Messages API. Only the Provider changes.
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>

#include <cstdio>

static int run(const std::string& kind) {
    auto llm = example::make_llm(R"({"responses": [
        {"text": "Same workflow, different wire format: the provider kind only changes how requests are encoded."}
    ], "when_exhausted": "repeat_last"})",
                                 kind);
    std::printf("=== provider_kind=%s model=%s ===\n", kind.c_str(), llm.provider.to_string().c_str());
    rath::flow::Agent agent("Answer in one sentence.", {.loop = {.provider = llm.provider, .on_event = example::stream_to_stdout()}});
    rath::Session out = agent(rath::Session::from_user_message("What changes when I switch providers?"));
    auto text = out.text();
    std::printf("\n");
    return text ? 0 : 1;
}

int main() { return run("openai") + run("anthropic"); }
