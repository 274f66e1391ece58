#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/settled.hpp>

#include "lib/llm/transport.hpp"

namespace rath::llm {

ChatClient::~ChatClient() = default;

boost::asio::awaitable<void> ChatClient::async_complete(const ChatRequest& request, ChatResponse& out,
                                                        const DeltaCallback* on_delta) {
    if (on_delta && !*on_delta) on_delta = nullptr;
    if (on_delta && !supports_streaming())
        return rath::async::failed_awaitable<void>(std::make_exception_ptr(ProviderConfigError(
            std::string("chat client kind '") + std::string(kind()) + "' does not support streaming")));
    return rath::async::start_or_fail<void>([&] { return do_complete(request, out, on_delta); });
}

namespace {
boost::asio::awaitable<ChatResponse> complete_value(ChatClient& client, ChatRequest request, DeltaCallback on_delta) {
    ChatResponse out;
    const DeltaCallback* cb = on_delta ? &on_delta : nullptr;
    co_await client.async_complete(request, out, cb);
    co_return out;
}
}  // namespace

ChatResponse ChatClient::complete(const ChatRequest& request, const DeltaCallback& on_delta) {
    return rath::async::block_on(runtime(), complete_value(*this, request, on_delta));
}

rath::async::Runtime& ChatClient::runtime() const noexcept {
    return runtime_ ? *runtime_ : rath::async::Runtime::default_runtime();
}

}  // namespace rath::llm
