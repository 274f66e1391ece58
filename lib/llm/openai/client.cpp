#include <rath/llm/openai_client.hpp>

#include <rath/config/env.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "lib/llm/http_chat_client.hpp"
#include "lib/llm/openai/wire.hpp"
#include "lib/llm/transport.hpp"

#include <boost/json.hpp>

namespace rath::llm {

namespace {

// The headers carry the key and OPENAI_ORG_ID / OPENAI_PROJECT_ID as of construction.
struct OpenAIState final : HttpChatClient::State {
    std::string base_url{}, api_version{};
    std::string chat_url{};  // every request's URL unless legacy Azure (per-model URL)
    bool azure = false, legacy_azure = false;

    std::string resolve_model(const ChatRequest& request) const;
    std::string url_for(const std::string& model) const;
    detail::PreparedCall prepare(const ChatRequest& request, bool stream) const override;
};

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

net::HttpRequest make_request(std::string url, const std::shared_ptr<const net::HeaderBlock>& preset,
                              openai::ChatBody body, detail::TransportExtras& extras) {
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
std::unique_ptr<detail::StreamDecoder> make_chunk_decoder() { return std::make_unique<ChunkDecoder>(); }

std::unique_ptr<const HttpChatClient::State> openai_state(Provider provider, ChatClientOptions options) {
    StateBuilder<OpenAIState> b("openai", std::move(provider), std::move(options));
    OpenAIState& m = *b.state;
    std::string key;
    m.base_url = resolve_setting(m.provider.base_url, config::provider_env("openai", config::ProviderField::base_url));
    if (m.base_url.empty())
        if (const auto& c = b.config_entry()) m.base_url = resolve_credential({c->base_url});
    if (m.base_url.empty()) m.base_url = default_openai_base;
    m.azure = m.base_url.find(".azure.com") != std::string::npos;
    key = resolve_setting(m.provider.api_key, config::provider_env("openai", config::ProviderField::api_key, m.azure));
    key = b.require_key(std::move(key),
                        "No API key found: set Provider.api_key, the OPENAI_API_KEY environment variable "
                        "(AZURE_OPENAI_API_KEY for Azure) or an openai entry with api_key in config.json");
    m.legacy_azure = m.azure && m.base_url.find("/openai/v1") == std::string::npos;
    m.api_version = resolve_credential({env_value("OPENAI_API_VERSION"), env_value("AZURE_OPENAI_API_VERSION")});
    if (m.api_version.empty()) m.api_version = default_azure_api_version;
    if (!m.legacy_azure) m.chat_url = detail::join_url(m.base_url, "/chat/completions");
    auto headers = [&](const char* accept) {
        std::vector<net::HttpHeader> hs{{"Content-Type", "application/json"}, {"Accept", accept}};
        if (m.legacy_azure)
            hs.push_back({"api-key", key});
        else
            hs.push_back({"Authorization", "Bearer " + key});
        if (auto org = env_value("OPENAI_ORG_ID")) hs.push_back({"OpenAI-Organization", *org});
        if (auto proj = env_value("OPENAI_PROJECT_ID")) hs.push_back({"OpenAI-Project", *proj});
        try {
            return std::make_shared<const net::HeaderBlock>(std::move(hs));
        } catch (const net::HttpError&) {  // names only: the key may be what is malformed
            throw ProviderConfigError("the API key or an OPENAI_ORG_ID / OPENAI_PROJECT_ID value contains CR, LF or NUL");
        }
    };
    return b.finish(key, headers, &parse_response, &make_chunk_decoder);
}

const OpenAIState& openai_of(const HttpChatClient::State& s) { return static_cast<const OpenAIState&>(s); }

}  // namespace

OpenAIChatClient::OpenAIChatClient(Provider provider, ChatClientOptions options)
    : HttpChatClient(openai_state(std::move(provider), options), options.runtime) {}

const std::string& OpenAIChatClient::base_url() const noexcept { return openai_of(state()).base_url; }
bool OpenAIChatClient::is_azure() const noexcept { return openai_of(state()).azure; }
bool OpenAIChatClient::is_legacy_azure() const noexcept { return openai_of(state()).legacy_azure; }
const std::string& OpenAIChatClient::api_version() const noexcept { return openai_of(state()).api_version; }
std::string OpenAIChatClient::resolve_model(const ChatRequest& request) const {
    return openai_of(state()).resolve_model(request);
}
std::string OpenAIChatClient::chat_url(const std::string& model) const { return openai_of(state()).url_for(model); }



std::string OpenAIState::resolve_model(const ChatRequest& request) const {
    return detail::resolve_model(request, provider, "openai");
}

std::string OpenAIState::url_for(const std::string& model) const {
    if (!legacy_azure) return chat_url;
    // Legacy Azure: {endpoint}/openai/deployments/{model}/chat/completions?api-version=.
    // An endpoint that already ends in /openai is not doubled.
    std::string endpoint = base_url;
    if (auto q = endpoint.find('?'); q != std::string::npos) endpoint.resize(q);
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (endpoint.size() >= 7 && endpoint.compare(endpoint.size() - 7, 7, "/openai") == 0) endpoint.resize(endpoint.size() - 7);
    return detail::join_url(endpoint, "/openai/deployments/" + detail::url_encode(model) + "/chat/completions",
                            {{"api-version", api_version}});
}


detail::PreparedCall OpenAIState::prepare(const ChatRequest& request, bool stream) const {
    detail::PreparedCall call;
    call.model = resolve_model(request);
    detail::TransportExtras extras;
    openai::ChatBody body = openai::build_chat_body(request, call.model, stream, &extras);
    call.timeout_seconds = extras.timeout_seconds;
    call.request = make_request(url_for(call.model), stream ? sse_headers : json_headers, std::move(body), extras);
    return call;
}

}  // namespace rath::llm
