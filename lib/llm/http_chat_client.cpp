#include "lib/llm/http_chat_client.hpp"

namespace rath::llm {

HttpChatClient::HttpChatClient(std::unique_ptr<const State> state, rath::async::Runtime* runtime)
    : ChatClient(runtime), state_(std::move(state)) {}

HttpChatClient::~HttpChatClient() = default;

const Provider& HttpChatClient::provider() const noexcept { return state_->provider; }

boost::asio::awaitable<void> HttpChatClient::do_complete(const ChatRequest& request, ChatResponse& out,
                                                         const DeltaCallback* on_delta) {
    const bool stream = on_delta != nullptr;
    return detail::async_exchange<ChatResponse>(state_->endpoint, state_->prepare(request, stream), state_->parse,
                                                stream ? state_->decoder : nullptr, on_delta, out);
}

}  // namespace rath::llm
