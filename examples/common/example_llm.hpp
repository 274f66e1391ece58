#pragma once
// Shared by the examples: a real provider when a key is set (environment or
// config.json), otherwise rath's fake OpenAI/Anthropic server started in-process with a
// script, so every example makes a real HTTP round trip with no key and no network.
#include <rath/fake_llm/server.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/stream_delta.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

namespace example {

struct Llm {
    std::unique_ptr<rath::fake_llm::Server> server;  // null when talking to a real provider
    rath::llm::Provider provider;
    bool offline() const { return server != nullptr; }
};

// True when a real client of the provider's kind can be made from what the provider,
// the environment and config.json hold: the resolution the run itself uses, so a key
// kept only in config.json counts as a key.
inline bool has_real_credentials(const rath::llm::Provider& provider) {
    try {
        (void)rath::llm::chat_client_for(provider);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

// RATH_EXAMPLES_OFFLINE=1: always the fake server (what the example tests set).
inline bool forced_offline() {
    const char* v = std::getenv("RATH_EXAMPLES_OFFLINE");
    return v && v[0] == '1' && v[1] == '\0';
}

// kind: "openai" (OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_DEFAULT_MODEL, else the
// config.json entry of that kind) or "anthropic" (ANTHROPIC_API_KEY ..., likewise).
// RATH_EXAMPLES_OFFLINE=1 forces the fake server.
inline Llm make_llm(const std::string& offline_script, const std::string& kind = "openai") {
    Llm llm;
    llm.provider.provider_kind = kind;
    if (!forced_offline() && has_real_credentials(llm.provider)) {
        if (kind == "anthropic") {
            llm.provider.model = "claude-opus-4-7";
            llm.provider.sampling.max_tokens = 256;
        }
        return llm;  // key, base URL and model come from the environment / config
    }
    rath::fake_llm::ServerOptions options;
    options.mode = offline_script.empty() ? rath::fake_llm::Mode::fanout : rath::fake_llm::Mode::script;
    options.script = offline_script;
    llm.server = std::make_unique<rath::fake_llm::Server>(options);
    llm.server->start();
    llm.provider.base_url = llm.server->base_url();
    llm.provider.api_key = "sk-fake-local";
    llm.provider.model = "fake-model";
    std::printf("(no API key: using the fake LLM server at %s)\n", llm.server->base_url().c_str());
    return llm;
}

// Writes each streamed text delta to stdout as it arrives.
inline auto stream_to_stdout() {
    return [](const rath::llm::StreamDelta& d) {
        if (d.content_delta) {
            std::fputs(d.content_delta->c_str(), stdout);
            std::fflush(stdout);
        }
    };
}

}  // namespace example
