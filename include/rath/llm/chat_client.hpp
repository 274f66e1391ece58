#pragma once
// ChatClient: one chat completion per call, streamed or not, against one provider
// endpoint (llm.md §2). The OpenAI and Anthropic clients, and any kind a program
// registers (registry.hpp), implement do_complete; callers use async_complete or the
// blocking complete.
//
// Thread safety: a client is immutable after construction; any number of calls may run
// at once from any threads. Cancellation: cancelling the awaiting coroutine (Asio
// cancellation slot, e.g. a deadline) aborts the HTTP exchange in flight and any retry
// sleep; the call then fails with the cancellation error. Errors: the ProviderError
// family of llm/error.hpp (status, type, retry-after, partial stream), and
// ProviderConfigError for what the request or the client's settings make impossible.
#include <rath/llm/provider.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_delta.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

namespace rath::async {
class Runtime;
}

namespace rath::llm {

using DeltaCallback = std::function<void(const StreamDelta&)>;
// Replaces the timer between retries (tests record the delays instead of sleeping).
using SleepFn = std::function<boost::asio::awaitable<void>(std::chrono::duration<double>)>;

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
    virtual ~ChatClient();
    ChatClient(const ChatClient&) = delete;
    ChatClient& operator=(const ChatClient&) = delete;

    virtual const Provider& provider() const noexcept = 0;
    virtual std::string_view kind() const noexcept = 0;
    virtual bool supports_streaming() const noexcept { return false; }

    // Completes `request` into `out` (overwritten; unspecified after a failure),
    // retried per the provider's policy. With `on_delta` the answer is streamed:
    // *on_delta sees every delta, in order, on a runtime thread, and `out` is their
    // fold; only the open phase of a stream is retried, and a stream that fails after
    // deltas reached the caller carries them in ProviderError::partial(). `request`,
    // `out` and `*on_delta` are borrowed until the awaitable completes (co_await it at
    // once), as is the client itself. ProviderConfigError when the client cannot
    // stream and `on_delta` is given.
    [[nodiscard]] boost::asio::awaitable<void> async_complete(const ChatRequest& request, ChatResponse& out,
                                                              const DeltaCallback* on_delta = nullptr);

    // The same, blocking the calling thread (throws async::DeadlockError on a runtime
    // thread). An empty `on_delta` means no streaming.
    ChatResponse complete(const ChatRequest& request, const DeltaCallback& on_delta = {});

    rath::async::Runtime& runtime() const noexcept;

protected:
    explicit ChatClient(rath::async::Runtime* rt) : runtime_(rt) {}

private:
    // What async_complete runs once it checked `on_delta` against supports_streaming().
    virtual boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                                     const DeltaCallback* on_delta) = 0;

    rath::async::Runtime* runtime_;
};

}  // namespace rath::llm
