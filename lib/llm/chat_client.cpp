#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>

#include <rath/async/block_on.hpp>

namespace rath::llm {

boost::asio::awaitable<ChatResponse> ChatClient::async_stream(ChatRequest, DeltaCallback) {
    throw ProviderConfigError(std::string("chat client kind '") + std::string(kind()) + "' does not support streaming");
    co_return ChatResponse{};
}

rath::async::Runtime& ChatClient::runtime() const noexcept {
    return runtime_ ? *runtime_ : rath::async::Runtime::default_runtime();
}

ChatResponse ChatClient::complete(ChatRequest request) {
    return rath::async::block_on(runtime(), async_complete(std::move(request)));
}

ChatResponse ChatClient::stream(ChatRequest request, DeltaCallback on_delta) {
    return rath::async::block_on(runtime(), async_stream(std::move(request), std::move(on_delta)));
}

}  // namespace rath::llm
