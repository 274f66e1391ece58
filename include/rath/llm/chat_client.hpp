#pragma once
// The chat client contract: coroutine calls with a synchronous facade on top.
#include <rath/async/runtime.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/retry.hpp>
#include <rath/llm/stream_delta.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::llm {

namespace detail {
// Awaits `op` and assigns its result to `out` (the default of the *_into calls).
boost::asio::awaitable<void> async_assign(boost::asio::awaitable<ChatResponse> op, ChatResponse& out);
}  // namespace detail

using DeltaCallback = std::function<void(const StreamDelta&)>;

struct ChatClientOptions {
    rath::async::Runtime* runtime = nullptr;       // null: the default runtime
    std::shared_ptr<rath::net::HttpClient> http{};   // null: a client built from http_options
    rath::net::HttpClientOptions http_options{};
    // Retry knobs below the Provider's retry_max_attempts / retry_base_seconds.
    double retry_cap_seconds = 30.0;
    bool retry_jitter = true;
    double max_retry_after_seconds = 60.0;
    SleepFn sleep{};  // replaces the retry timer (tests)
};

class ChatClient {
public:
    virtual ~ChatClient() = default;

    virtual const Provider& provider() const noexcept = 0;
    virtual std::string_view kind() const noexcept = 0;

    // One completion, retried per the provider's policy. The awaitables borrow the
    // client (its HTTP client, key and retry policy): keep the client alive until they
    // complete, as the agent loop does.
    virtual boost::asio::awaitable<ChatResponse> async_complete(ChatRequest request) = 0;

    virtual bool supports_streaming() const noexcept { return false; }
    // Streams: `on_delta` sees every delta as it arrives, the folded response is
    // returned. Only the open phase is retried, never a stream that delivered deltas.
    // A failure after deltas carries them in ProviderError::partial().
    virtual boost::asio::awaitable<ChatResponse> async_stream(ChatRequest request, DeltaCallback on_delta);

    // The same two calls with a borrowed request, which need only live until the call
    // returns (not until the awaitable completes). The defaults copy it; clients that
    // encode the body before their coroutine starts (OpenAI, Anthropic) read it in
    // place, so a caller that keeps its conversation (the agent loop) never copies it.
    virtual boost::asio::awaitable<ChatResponse> async_complete_borrowed(const ChatRequest& request) {
        return async_complete(request);
    }
    virtual boost::asio::awaitable<ChatResponse> async_stream_borrowed(const ChatRequest& request,
                                                                       DeltaCallback on_delta) {
        return async_stream(request, std::move(on_delta));
    }
    // The borrowed calls again, with the response written into `out` (overwritten; left
    // unspecified when the call fails), which must outlive the awaitable. A caller that
    // keeps its own response slot (the agent loop) then holds no second one in the
    // client's frames while it waits. The defaults assign the borrowed calls' result;
    // the OpenAI and Anthropic clients write it in place.
    virtual boost::asio::awaitable<void> async_complete_into(const ChatRequest& request, ChatResponse& out);
    virtual boost::asio::awaitable<void> async_stream_into(const ChatRequest& request, DeltaCallback on_delta,
                                                           ChatResponse& out);

    // Blocking facades (not callable from a runtime thread).
    ChatResponse complete(ChatRequest request);
    ChatResponse stream(ChatRequest request, DeltaCallback on_delta);

    rath::async::Runtime& runtime() const noexcept;

protected:
    explicit ChatClient(rath::async::Runtime* rt) : runtime_(rt) {}

    // For clients that write answers in place: the borrowed value calls made from their
    // *_into calls (started now, while `request` lives), the answer kept in a slot that
    // travels with the returned awaitable.
    boost::asio::awaitable<ChatResponse> complete_by_into(const ChatRequest& request);
    boost::asio::awaitable<ChatResponse> stream_by_into(const ChatRequest& request, DeltaCallback on_delta);

private:
    rath::async::Runtime* runtime_;
};

}  // namespace rath::llm
