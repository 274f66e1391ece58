#include <rath/llm/anthropic_client.hpp>

#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "lib/llm/anthropic/wire.hpp"
#include "lib/llm/stream_driver.hpp"
#include "lib/llm/transport.hpp"

#include <boost/algorithm/string/predicate.hpp>
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
    http_ = detail::make_http(options_);
}

std::string AnthropicChatClient::resolve_model(const ChatRequest& request) const {
    std::string m = resolve_credential({request.model, provider_.model, env_value("ANTHROPIC_DEFAULT_MODEL")});
    if (m.empty())
        if (auto c = detail::config_fallback("anthropic")) m = resolve_credential({c->model});
    if (m.empty()) throw ProviderConfigError("model is required: set ChatRequest.model or Provider.model");
    return m;
}

namespace {
net::HttpRequest make_request(const std::string& base, const std::string& key, const boost::json::object& body,
                              detail::TransportExtras& extras, bool stream) {
    net::HttpRequest req;
    // The base URL excludes /v1; one given with it (a common mistake) is not doubled.
    std::string_view b = base;
    std::string_view path = "/v1/messages";
    std::string trimmed(b.substr(0, b.find('?')));
    while (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
    if (trimmed.size() >= 3 && trimmed.compare(trimmed.size() - 3, 3, "/v1") == 0) path = "/messages";
    req.url = detail::join_url(base, path, extras.query);
    req.headers.push_back({"x-api-key", key});
    req.headers.push_back({"anthropic-version", anthropic_version});
    req.headers.push_back({"content-type", "application/json"});
    req.headers.push_back({"accept", stream ? "text/event-stream" : "application/json"});
    for (auto& h : extras.headers) {
        bool replaced = false;
        for (auto& e : req.headers)
            if (boost::algorithm::iequals(e.name, h.name)) e.value = h.value, replaced = true;
        if (!replaced) req.headers.push_back(h);
    }
    req.body = boost::json::serialize(body);
    return req;
}

ChatResponse parse_response(const net::HttpResponse& resp) { return anthropic::parse_messages_response(resp.body); }
}  // namespace

// As in the OpenAI client: plain functions that turn the request into an HTTP request
// at once (a waiting session then holds no ChatRequest); preparation errors are
// delivered at the await.
boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_complete(ChatRequest request) {
    net::HttpRequest req;
    std::optional<double> timeout;
    try {
        const std::string model = resolve_model(request);
        detail::TransportExtras extras;
        auto body = anthropic::build_messages_body(request, model, false, &extras);
        request = ChatRequest{};
        req = make_request(base_url_, api_key_, body, extras, false);
        timeout = extras.timeout_seconds;
    } catch (...) {
        return detail::fail_later<ChatResponse>(std::current_exception());
    }
    auto retry = detail::retry_options(provider_.retry_max_attempts, provider_.retry_base_seconds, options_);
    return detail::async_send_parsed<ChatResponse>(*http_, std::move(req), "anthropic", api_key_, timeout,
                                                   std::move(retry), &parse_response);
}

boost::asio::awaitable<ChatResponse> AnthropicChatClient::async_stream(ChatRequest request, DeltaCallback on_delta) {
    detail::StreamCall call;
    try {
        const std::string model = resolve_model(request);
        detail::TransportExtras extras;
        auto body = anthropic::build_messages_body(request, model, true, &extras);
        request = ChatRequest{};
        call.http = http_.get();
        call.request = make_request(base_url_, api_key_, body, extras, true);
        call.provider = "anthropic";
        call.secret = api_key_;
        call.timeout_seconds = extras.timeout_seconds;
        call.retry = detail::retry_options(provider_.retry_max_attempts, provider_.retry_base_seconds, options_);
        call.model = model;
        call.make_decoder = [] { return std::make_unique<EventDecoder>(); };
    } catch (...) {
        return detail::fail_later<ChatResponse>(std::current_exception());
    }
    return detail::async_run_stream(std::move(call), std::move(on_delta));
}

}  // namespace rath::llm
