#include <rath/llm/openai_client.hpp>

#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "lib/llm/openai/wire.hpp"
#include "lib/llm/stream_driver.hpp"
#include "lib/llm/transport.hpp"

#include <boost/json.hpp>

namespace rath::llm {

namespace {
constexpr const char* default_openai_base = "https://api.openai.com/v1";
constexpr const char* default_azure_api_version = "2024-10-21";

class ChunkDecoder final : public detail::StreamDecoder {
public:
    bool on_event(std::string_view event, std::string_view data, const Emit& emit) override {
        return mapper_.on_event(event, data, emit);
    }
    // Without [DONE] the stream still counts as complete once a finish reason came.
    bool complete() const override { return mapper_.done() || mapper_.finished(); }

private:
    openai::ChunkMapper mapper_;
};
}  // namespace

OpenAIChatClient::OpenAIChatClient(Provider provider, ChatClientOptions options)
    : ChatClient(options.runtime), provider_(std::move(provider)), options_(std::move(options)) {
    std::optional<std::optional<config::LlmProviderEntry>> cfg;
    auto config_entry = [&]() -> const std::optional<config::LlmProviderEntry>& {
        if (!cfg) cfg = detail::config_fallback("openai");
        return *cfg;
    };
    base_url_ = resolve_credential({provider_.base_url, env_value("OPENAI_BASE_URL"), env_value("AZURE_OPENAI_ENDPOINT")});
    if (base_url_.empty())
        if (const auto& c = config_entry()) base_url_ = resolve_credential({c->base_url});
    if (base_url_.empty()) base_url_ = default_openai_base;
    azure_ = base_url_.find(".azure.com") != std::string::npos;
    if (azure_)
        api_key_ = resolve_credential({provider_.api_key, env_value("AZURE_OPENAI_API_KEY"), env_value("AZURE_API_KEY"),
                                       env_value("OPENAI_API_KEY")});
    else
        api_key_ = resolve_credential({provider_.api_key, env_value("OPENAI_API_KEY"), env_value("AZURE_OPENAI_API_KEY")});
    if (api_key_.empty())
        if (const auto& c = config_entry()) api_key_ = resolve_credential({c->api_key});
    if (api_key_.empty())
        throw ProviderConfigError(
            "No API key found: set Provider.api_key, the OPENAI_API_KEY environment variable (AZURE_OPENAI_API_KEY "
            "for Azure) or an openai entry with api_key in config.json");
    legacy_azure_ = azure_ && base_url_.find("/openai/v1") == std::string::npos;
    api_version_ = resolve_credential({env_value("OPENAI_API_VERSION"), env_value("AZURE_OPENAI_API_VERSION")});
    if (api_version_.empty()) api_version_ = default_azure_api_version;
    if (!legacy_azure_) chat_url_ = detail::join_url(base_url_, "/chat/completions");
    auto headers = [&](const char* accept) {
        std::vector<net::HttpHeader> hs{{"Content-Type", "application/json"}, {"Accept", accept}};
        if (legacy_azure_)
            hs.push_back({"api-key", api_key_});
        else
            hs.push_back({"Authorization", "Bearer " + api_key_});
        if (auto org = env_value("OPENAI_ORG_ID")) hs.push_back({"OpenAI-Organization", *org});
        if (auto proj = env_value("OPENAI_PROJECT_ID")) hs.push_back({"OpenAI-Project", *proj});
        try {
            return std::make_shared<const net::HeaderBlock>(std::move(hs));
        } catch (const net::HttpError&) {  // names only: the key may be what is malformed
            throw ProviderConfigError("the API key or an OPENAI_ORG_ID / OPENAI_PROJECT_ID value contains CR, LF or NUL");
        }
    };
    json_headers_ = headers("application/json");
    sse_headers_ = headers("text/event-stream");
    retry_ = detail::retry_options(provider_.retry_max_attempts, provider_.retry_base_seconds, options_);
    http_ = detail::make_http(options_);
}

std::string OpenAIChatClient::resolve_model(const ChatRequest& request) const {
    return detail::resolve_model(request, provider_, "OPENAI_DEFAULT_MODEL", "openai");
}

std::string OpenAIChatClient::chat_url(const std::string& model) const {
    if (!legacy_azure_) return chat_url_;
    // Legacy Azure: {endpoint}/openai/deployments/{model}/chat/completions?api-version=.
    // An endpoint that already ends in /openai is not doubled.
    std::string endpoint = base_url_;
    if (auto q = endpoint.find('?'); q != std::string::npos) endpoint.resize(q);
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (endpoint.size() >= 7 && endpoint.compare(endpoint.size() - 7, 7, "/openai") == 0) endpoint.resize(endpoint.size() - 7);
    return detail::join_url(endpoint, "/openai/deployments/" + detail::url_encode(model) + "/chat/completions",
                            {{"api-version", api_version_}});
}

namespace {
net::HttpRequest make_request(std::string url, const std::shared_ptr<const net::HeaderBlock>& preset,
                              openai::ChatBodyParts body, detail::TransportExtras& extras) {
    net::HttpRequest req;
    req.method = "POST";
    req.url = std::move(url);
    if (!extras.query.empty()) {
        std::string qs;
        for (const auto& [k, v] : extras.query) qs += (qs.empty() ? "" : "&") + detail::url_encode(k) + "=" + detail::url_encode(v);
        req.url += (req.url.find('?') == std::string::npos ? "?" : "&") + qs;
    }
    detail::set_headers(req, preset, extras);
    req.body = std::move(body.head);
    req.body_parts = std::move(body.parts);
    return req;
}

ChatResponse parse_response(net::HttpResponse& resp) { return openai::parse_chat_response_owned(std::move(resp.body), "openai"); }
}  // namespace

// The calls are plain functions: the request is turned into an HTTP request at once
// and only that travels into the coroutine, so a session waiting for its answer does
// not also hold its ChatRequest (and a borrowed request is never copied). Errors in
// that preparation are still delivered when the result is awaited, as for any other
// failure.
boost::asio::awaitable<ChatResponse> OpenAIChatClient::async_complete(ChatRequest request) {
    return async_complete_borrowed(request);
}

boost::asio::awaitable<ChatResponse> OpenAIChatClient::async_stream(ChatRequest request, DeltaCallback on_delta) {
    return async_stream_borrowed(request, std::move(on_delta));
}

net::HttpRequest OpenAIChatClient::http_request(const ChatRequest& request, bool stream, std::optional<double>& timeout,
                                                std::string& model) const {
    model = resolve_model(request);
    detail::TransportExtras extras;
    openai::ChatBodyParts body = openai::build_chat_body_parts(request, model, stream, &extras);
    timeout = extras.timeout_seconds;
    return make_request(chat_url(model), stream ? sse_headers_ : json_headers_, std::move(body), extras);
}

detail::StreamCall OpenAIChatClient::stream_call(const ChatRequest& request) const {
    detail::StreamCall call;
    call.request = http_request(request, true, call.timeout_seconds, call.model);
    call.http = http_.get();
    call.provider = "openai";
    call.secret = api_key_;
    call.retry = &retry_;
    call.make_decoder = []() -> std::unique_ptr<detail::StreamDecoder> { return std::make_unique<ChunkDecoder>(); };
    return call;
}

boost::asio::awaitable<ChatResponse> OpenAIChatClient::async_complete_borrowed(const ChatRequest& request) {
    return complete_by_into(request);
}

boost::asio::awaitable<void> OpenAIChatClient::async_complete_into(const ChatRequest& request, ChatResponse& out) {
    return detail::start_or_fail<void>([&] {
        std::optional<double> timeout;
        std::string model;
        net::HttpRequest req = http_request(request, false, timeout, model);
        return detail::async_send_parsed_into<ChatResponse>(*http_, std::move(req), "openai", api_key_, timeout,
                                                            retry_, &parse_response, out);
    });
}

boost::asio::awaitable<ChatResponse> OpenAIChatClient::async_stream_borrowed(const ChatRequest& request,
                                                                             DeltaCallback on_delta) {
    return stream_by_into(request, std::move(on_delta));
}

boost::asio::awaitable<void> OpenAIChatClient::async_stream_into(const ChatRequest& request, DeltaCallback on_delta,
                                                                 ChatResponse& out) {
    return detail::start_or_fail<void>(
        [&] { return detail::async_run_stream_into(stream_call(request), std::move(on_delta), out); });
}

}  // namespace rath::llm
