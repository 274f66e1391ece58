#include <rath/llm/embedding.hpp>

#include <rath/config/store.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "net/base64.hpp"
#include "lib/llm/json_util.hpp"
#include "lib/llm/side_client.hpp"

#include <rath/async/block_on.hpp>

#include <boost/json.hpp>

#include <bit>
#include <cstring>

namespace rath::llm {

namespace json = boost::json;
namespace dom = simdjson::dom;

EmbeddingProvider EmbeddingProvider::from_config(std::optional<std::string_view> name,
                                                 std::shared_ptr<config::ConfigStore> store,
                                                 std::optional<EmbeddingProvider> overrides) {
    if (!store) store = config::ConfigStore::load();
    EmbeddingProvider p;
    auto from_entry = [&](const config::LlmProviderEntry& e, bool keep_model) {
        p.api_key = e.api_key;
        p.base_url = e.base_url;
        p.model = keep_model && e.model && !e.model->empty() ? *e.model : std::string(default_embedding_model);
    };
    if (name && !name->empty()) {
        from_entry(store->get_llm_provider(*name), true);
    } else if (auto ep = store->embedding_provider(); ep && store->has_llm_provider(*ep)) {
        from_entry(store->get_llm_provider(*ep), true);
    } else if (auto dp = store->default_llm_provider()) {
        if (store->has_llm_provider(*dp)) from_entry(store->get_llm_provider(*dp), false);  // chat model is not an embedding model
    }
    if (overrides) {
        const EmbeddingProvider& o = *overrides;
        if (!o.model.empty() && o.model != default_embedding_model) p.model = o.model;
        if (o.base_url) p.base_url = o.base_url;
        if (o.api_key) p.api_key = o.api_key;
        if (o.dimensions) p.dimensions = o.dimensions;
        if (o.retry_max_attempts) p.retry_max_attempts = o.retry_max_attempts;
        if (o.retry_base_seconds) p.retry_base_seconds = o.retry_base_seconds;
    }
    return p;
}

EmbeddingClient::EmbeddingClient(EmbeddingProvider provider, ChatClientOptions options)
    : impl_(std::make_unique<const detail::SideClient<EmbeddingProvider>>(std::move(provider), std::move(options),
                                                          &config::ConfigStore::embedding_provider, "EmbeddingProvider", "llm.embedding_provider")) {}

EmbeddingClient::~EmbeddingClient() = default;

const EmbeddingProvider& EmbeddingClient::provider() const noexcept { return impl_->provider; }

namespace {
std::vector<double> decode_embedding(dom::element e) {
    std::vector<double> out;
    if (e.is_string()) {
        auto bytes = net::detail::base64_decode(std::string_view(e));
        if (!bytes || bytes->size() % 4 != 0)
            throw ResponseFormatError(ProviderErrorInfo{.provider = "openai", .status = 200, .type = "invalid_response",
                                                        .message = "embedding is not base64 float32 data"});
        out.reserve(bytes->size() / 4);
        for (std::size_t i = 0; i < bytes->size(); i += 4) {
            std::uint32_t u = std::uint32_t((unsigned char)(*bytes)[i]) | std::uint32_t((unsigned char)(*bytes)[i + 1]) << 8 |
                              std::uint32_t((unsigned char)(*bytes)[i + 2]) << 16 |
                              std::uint32_t((unsigned char)(*bytes)[i + 3]) << 24;  // little-endian on the wire
            out.push_back(double(std::bit_cast<float>(u)));
        }
    } else if (e.is_array()) {
        for (dom::element x : dom::array(e)) {
            double d;
            if (x.get_double().get(d) == simdjson::SUCCESS)
                out.push_back(d);
            else if (auto i = detail::int_value(x))
                out.push_back(double(*i));
        }
    }
    return out;
}

std::vector<std::vector<double>> parse_embeddings(net::HttpResponse& resp) {
    detail::LeasedParser lease;  // the result is copied out before it returns
    dom::element root = detail::parse_response_body(lease.get(), resp.body, resp.status, "openai", "embedding");
    auto data = detail::array_field(root, "data");
    if (!data || data->size() == 0)
        throw ResponseFormatError(ProviderErrorInfo{.provider = "openai", .status = resp.status,
                                                    .type = "invalid_response", .message = "No embedding data received"});
    std::vector<std::vector<double>> out;
    for (dom::element item : *data) {
        auto emb = detail::field(item, "embedding");
        out.push_back(emb ? decode_embedding(*emb) : std::vector<double>{});
    }
    return out;
}
}  // namespace

boost::asio::awaitable<std::vector<std::vector<double>>> EmbeddingClient::async_embed(std::vector<std::string> texts) {
    if (texts.empty()) co_return std::vector<std::vector<double>>{};
    json::object body;
    body["model"] = impl_->provider.model;
    json::array input;
    for (auto& t : texts) input.emplace_back(json::string(t));
    body["input"] = std::move(input);
    if (impl_->provider.dimensions) body["dimensions"] = *impl_->provider.dimensions;
    body["encoding_format"] = "base64";
    std::string text = json::serialize(body);  // named: not a temporary in the co_await (GCC 12)
    co_return co_await detail::async_post_json(impl_->side, "/embeddings", std::move(text), &parse_embeddings);
}

std::vector<std::vector<double>> EmbeddingClient::embed(std::vector<std::string> texts) {
    auto& rt = impl_->options.runtime ? *impl_->options.runtime : rath::async::Runtime::default_runtime();
    return rath::async::block_on(rt, async_embed(std::move(texts)));
}

std::vector<double> EmbeddingClient::embed_one(std::string text) {
    auto v = embed({std::move(text)});
    return v.empty() ? std::vector<double>{} : std::move(v.front());
}

}  // namespace rath::llm
