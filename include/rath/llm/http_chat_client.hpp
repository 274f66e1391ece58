#pragma once
// HttpChatClient: the chat clients that speak a provider's HTTP API (the OpenAI-
// compatible and the Anthropic ones). What they share lives here: the provider, one
// endpoint (the shared keep-alive HTTP client, the key, the retry policy) and the call
// itself (llm.md §6.1, whole body or SSE stream); each kind says how a request becomes
// an HTTP request and how the answer reads. Thread safety, cancellation and errors: as
// ChatClient.
#include <rath/llm/chat_client.hpp>

#include <memory>

namespace rath::llm {

class HttpChatClient : public ChatClient {
public:
    ~HttpChatClient() override;

    const Provider& provider() const noexcept final;
    bool supports_streaming() const noexcept final { return true; }

    // What a kind builds at construction; defined inside the library.
    struct State;

protected:
    HttpChatClient(std::unique_ptr<const State> state, rath::async::Runtime* runtime);
    const State& state() const noexcept { return *state_; }

private:
    // Not a coroutine: the request becomes an HTTP request (its body encoded) before
    // this returns, and only that travels into the exchange, so a session waiting for
    // its answer does not also hold its ChatRequest. Preparation errors are delivered
    // at the await.
    boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                             const DeltaCallback* on_delta) final;

    std::unique_ptr<const State> state_;
};

}  // namespace rath::llm
