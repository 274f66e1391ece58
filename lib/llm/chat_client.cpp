#include <rath/llm/chat_client.hpp>
#include <rath/llm/error.hpp>

#include <rath/async/block_on.hpp>

#include <memory>

namespace rath::llm {

boost::asio::awaitable<ChatResponse> ChatClient::async_stream(ChatRequest, DeltaCallback) {
    throw ProviderConfigError(std::string("chat client kind '") + std::string(kind()) + "' does not support streaming");
    co_return ChatResponse{};
}

boost::asio::awaitable<void> detail::async_assign(boost::asio::awaitable<ChatResponse> op, ChatResponse& out) {
    out = co_await std::move(op);
}

// The borrowed call starts here, while `request` is alive; only its awaitable travels on.
boost::asio::awaitable<void> ChatClient::async_complete_into(const ChatRequest& request, ChatResponse& out) {
    return detail::async_assign(async_complete_borrowed(request), out);
}

boost::asio::awaitable<void> ChatClient::async_stream_into(const ChatRequest& request, DeltaCallback on_delta,
                                                           ChatResponse& out) {
    return detail::async_assign(async_stream_borrowed(request, std::move(on_delta)), out);
}

namespace {
// Awaits `op`, which writes into `*out`, and returns what it wrote.
boost::asio::awaitable<ChatResponse> take_answer(boost::asio::awaitable<void> op, std::unique_ptr<ChatResponse> out) {
    co_await std::move(op);
    co_return std::move(*out);
}
}  // namespace

boost::asio::awaitable<ChatResponse> ChatClient::complete_by_into(const ChatRequest& request) {
    auto out = std::make_unique<ChatResponse>();
    auto op = async_complete_into(request, *out);
    return take_answer(std::move(op), std::move(out));
}

boost::asio::awaitable<ChatResponse> ChatClient::stream_by_into(const ChatRequest& request, DeltaCallback on_delta) {
    auto out = std::make_unique<ChatResponse>();
    auto op = async_stream_into(request, std::move(on_delta), *out);
    return take_answer(std::move(op), std::move(out));
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
