#include <rath/llm/anthropic_client.hpp>

#include <rath/config/env.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "lib/llm/anthropic/wire.hpp"
#include "lib/llm/http_chat_client.hpp"
#include "lib/llm/transport.hpp"

#include <boost/json.hpp>

namespace rath::llm {

namespace {

// The headers carry the key and the API version.
struct AnthropicState final : HttpChatClient::State {
    std::string base_url{};
    std::string messages_url{};  // without query parameters

    detail::PreparedCall prepare(const ChatRequest& request, bool stream) const override;
};

constexpr const char* default_anthropic_base = "https://api.anthropic.com";

class EventDecoder final : public detail::StreamDecoder {
public:
    bool on_event(std::string_view event, std::string_view data, const Emit& emit) override {
        mapper_.on_event(event, data, emit);
        return !mapper_.stopped();
    }
    bool complete() const override { return mapper_.stopped() || mapper_.finished(); }

private:
    anthropic::EventMapper mapper_;
};

// The base URL excludes /v1; one given with it (a common mistake) is not doubled.
std::string messages_url(const std::string& base, const std::vector<std::pair<std::string, std::string>>& query) {
    std::string_view path = "/v1/messages";
    std::string trimmed(std::string_view(base).substr(0, base.find('?')));
    while (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
    if (trimmed.size() >= 3 && trimmed.compare(trimmed.size() - 3, 3, "/v1") == 0) path = "/messages";
    return detail::join_url(base, path, query);
}

net::HttpRequest make_request(std::string url, const std::shared_ptr<const net::HeaderBlock>& preset,
                              const boost::json::object& body, detail::TransportExtras& extras) {
    net::HttpRequest req;
    req.url = std::move(url);
    detail::set_headers(req, preset, extras);
    req.body = boost::json::serialize(body);
    return req;
}

// The client's cached messages URL, unless the request adds query parameters.
std::string request_url(const std::string& cached, const std::string& base, const detail::TransportExtras& extras) {
    return extras.query.empty() ? cached : messages_url(base, extras.query);
}

ChatResponse parse_response(net::HttpResponse& resp) { return anthropic::parse_messages_response(resp.body); }
std::unique_ptr<detail::StreamDecoder> make_event_decoder() { return std::make_unique<EventDecoder>(); }

std::unique_ptr<const HttpChatClient::State> anthropic_state(Provider provider, ChatClientOptions options) {
    StateBuilder<AnthropicState> b("anthropic", std::move(provider), std::move(options));
    AnthropicState& m = *b.state;
    std::string key = b.require_key(
        resolve_setting(m.provider.api_key, config::provider_env("anthropic", config::ProviderField::api_key)),
        "No Anthropic api_key found: set Provider.api_key, the ANTHROPIC_API_KEY environment variable or an "
        "anthropic entry with api_key in config.json");
    m.base_url = resolve_setting(m.provider.base_url, config::provider_env("anthropic", config::ProviderField::base_url));
    if (m.base_url.empty())
        if (const auto& c = b.config_entry()) m.base_url = resolve_credential({c->base_url});
    if (m.base_url.empty()) m.base_url = default_anthropic_base;
    m.messages_url = messages_url(m.base_url, {});
    auto headers = [&](const char* accept) {
        try {
            return std::make_shared<const net::HeaderBlock>(std::vector<net::HttpHeader>{
                {"x-api-key", key}, {"anthropic-version", anthropic_version},
                {"content-type", "application/json"}, {"accept", accept}});
        } catch (const net::HttpError&) {  // names only: the key is what is malformed
            throw ProviderConfigError("the Anthropic api_key contains CR, LF or NUL");
        }
    };
    return b.finish(key, headers, &parse_response, &make_event_decoder);
}

}  // namespace

AnthropicChatClient::AnthropicChatClient(Provider provider, ChatClientOptions options)
    : HttpChatClient(anthropic_state(std::move(provider), options), options.runtime) {}

const std::string& AnthropicChatClient::base_url() const noexcept {
    return static_cast<const AnthropicState&>(state()).base_url;
}



std::string AnthropicChatClient::resolve_model(const ChatRequest& request) const {
    return detail::resolve_model(request, provider(), "anthropic");
}


detail::PreparedCall AnthropicState::prepare(const ChatRequest& request, bool stream) const {
    detail::PreparedCall call;
    call.model = detail::resolve_model(request, provider, "anthropic");
    detail::TransportExtras extras;
    auto body = anthropic::build_messages_body(request, call.model, stream, &extras);
    call.timeout_seconds = extras.timeout_seconds;
    call.request = make_request(request_url(messages_url, base_url, extras), stream ? sse_headers : json_headers, body,
                                extras);
    return call;
}

}  // namespace rath::llm
