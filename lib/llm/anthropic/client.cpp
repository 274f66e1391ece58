#include <rath/llm/anthropic_client.hpp>

#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "lib/llm/anthropic/wire.hpp"
#include "lib/llm/stream_driver.hpp"
#include "lib/llm/transport.hpp"

#include <boost/json.hpp>

namespace rath::llm {

namespace {
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
}  // namespace

AnthropicChatClient::AnthropicChatClient(Provider provider, ChatClientOptions options)
    : ChatClient(options.runtime), provider_(std::move(provider)), options_(std::move(options)) {
    std::optional<std::optional<config::LlmProviderEntry>> cfg;
    auto config_entry = [&]() -> const std::optional<config::LlmProviderEntry>& {
        if (!cfg) cfg = detail::config_fallback("anthropic");
        return *cfg;
    };
    api_key_ = resolve_credential({provider_.api_key, env_value("ANTHROPIC_API_KEY")});
    if (api_key_.empty())
        if (const auto& c = config_entry()) api_key_ = resolve_credential({c->api_key});
    if (api_key_.empty())
        throw ProviderConfigError(
            "No Anthropic api_key found: set Provider.api_key, the ANTHROPIC_API_KEY environment variable or an "
            "anthropic entry with api_key in config.json");
    base_url_ = resolve_credential({provider_.base_url, env_value("ANTHROPIC_BASE_URL")});
    if (base_url_.empty())
        if (const auto& c = config_entry()) base_url_ = resolve_credential({c->base_url});
    if (base_url_.empty()) base_url_ = default_anthropic_base;
    messages_url_ = messages_url(base_url_, {});
    auto headers = [&](const char* accept) {
        try {
            return std::make_shared<const net::HeaderBlock>(std::vector<net::HttpHeader>{
                {"x-api-key", api_key_}, {"anthropic-version", anthropic_version},
                {"content-type", "application/json"}, {"accept", accept}});
        } catch (const net::HttpError&) {  // names only: the key is what is malformed
            throw ProviderConfigError("the Anthropic api_key contains CR, LF or NUL");
        }
    };
    json_headers_ = headers("application/json");
    sse_headers_ = headers("text/event-stream");
    retry_ = detail::retry_options(provider_.retry_max_attempts, provider_.retry_base_seconds, options_);
    http_ = detail::make_http(options_);
}

std::string AnthropicChatClient::resolve_model(const ChatRequest& request) const {
    return detail::resolve_model(request, provider_, "ANTHROPIC_DEFAULT_MODEL", "anthropic");
}

namespace {
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
}  // namespace

// As in the OpenAI client: plain functions that turn the request into an HTTP request
// at once (a waiting session then holds no ChatRequest); preparation errors are
// delivered at the await.
boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_complete(ChatRequest request) {
    return async_complete_borrowed(request);
}

boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_stream(ChatRequest request, DeltaCallback on_delta) {
    return async_stream_borrowed(request, std::move(on_delta));
}

net::HttpRequest AnthropicChatClient::http_request(const ChatRequest& request, bool stream,
                                                   std::optional<double>& timeout, std::string& model) const {
    model = resolve_model(request);
    detail::TransportExtras extras;
    auto body = anthropic::build_messages_body(request, model, stream, &extras);
    timeout = extras.timeout_seconds;
    return make_request(request_url(messages_url_, base_url_, extras), stream ? sse_headers_ : json_headers_, body,
                        extras);
}

detail::StreamCall AnthropicChatClient::stream_call(const ChatRequest& request) const {
    detail::StreamCall call;
    call.request = http_request(request, true, call.timeout_seconds, call.model);
    call.http = http_.get();
    call.provider = "anthropic";
    call.secret = api_key_;
    call.retry = &retry_;
    call.make_decoder = []() -> std::unique_ptr<detail::StreamDecoder> { return std::make_unique<EventDecoder>(); };
    return call;
}

boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_complete_borrowed(const ChatRequest& request) {
    return complete_by_into(request);
}

boost::asio::awaitable<void> AnthropicChatClient::async_complete_into(const ChatRequest& request, ChatResponse& out) {
    return detail::start_or_fail<void>([&] {
        std::optional<double> timeout;
        std::string model;
        net::HttpRequest req = http_request(request, false, timeout, model);
        return detail::async_send_parsed_into<ChatResponse>(*http_, std::move(req), "anthropic", api_key_, timeout,
                                                            retry_, &parse_response, out);
    });
}

boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_stream_borrowed(const ChatRequest& request,
                                                                                DeltaCallback on_delta) {
    return stream_by_into(request, std::move(on_delta));
}

boost::asio::awaitable<void> AnthropicChatClient::async_stream_into(const ChatRequest& request, DeltaCallback on_delta,
                                                                    ChatResponse& out) {
    return detail::start_or_fail<void>(
        [&] { return detail::async_run_stream_into(stream_call(request), std::move(on_delta), out); });
}

}  // namespace rath::llm
