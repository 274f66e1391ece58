#include <rath/llm/vlm.hpp>

#include <rath/config/store.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include "net/base64.hpp"
#include "lib/llm/json_util.hpp"
#include "lib/llm/side_client.hpp"

#include <rath/async/block_on.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rath::llm {

namespace json = boost::json;
namespace dom = simdjson::dom;

VLMProvider VLMProvider::from_config(std::optional<std::string_view> name, std::shared_ptr<config::ConfigStore> store) {
    if (!store) store = config::ConfigStore::load();
    std::string target;
    if (name && !name->empty())
        target = std::string(*name);
    else if (auto v = store->vlm_provider())
        target = *v;
    else
        throw config::ConfigLookupError("no VLM provider configured: set llm.vlm_provider in " + store->path().string() +
                                        " or pass name= explicitly");
    auto e = store->get_llm_provider(target);
    if (!e.model || e.model->empty())
        throw config::ConfigLookupError("VLM provider '" + target + "' has no model set; add a model to llm.providers." +
                                        target + " in " + store->path().string());
    VLMProvider p;
    p.model = *e.model;
    p.api_key = e.api_key;
    p.base_url = e.base_url;
    if (e.max_tokens) p.max_tokens = e.max_tokens;
    p.temperature = e.temperature;
    return p;
}

std::string guess_image_mime(const std::filesystem::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (ext == ".png") return "image/png";
    if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
    if (ext == ".gif") return "image/gif";
    if (ext == ".webp") return "image/webp";
    if (ext == ".bmp") return "image/bmp";
    if (ext == ".svg") return "image/svg+xml";
    if (ext == ".tif" || ext == ".tiff") return "image/tiff";
    return "application/octet-stream";
}


namespace {
// The first choice's text ("" when there is none).
std::string parse_description(net::HttpResponse& resp) {
    detail::LeasedParser lease;  // the result is copied out before it returns
    dom::element root = detail::parse_response_body(lease.get(), resp.body, resp.status, "openai", "VLM");
    auto choices = detail::array_field(root, "choices");
    if (!choices || choices->size() == 0) return std::string();
    auto msg = detail::field(choices->at(0).value(), "message");
    if (!msg) return std::string();
    auto c = detail::string_field(*msg, "content");
    return c ? std::string(*c) : std::string();
}
}  // namespace

boost::asio::awaitable<std::string> VLMClient::async_describe(std::string image, std::string prompt, std::string mime) {
    const VLMProvider& p = impl_->provider;
    json::object body;
    body["model"] = p.model;
    json::array content{json::object{{"type", "text"}, {"text", prompt}},
                        json::object{{"type", "image_url"},
                                     {"image_url", json::object{{"url", "data:" + mime + ";base64," + net::detail::base64_encode(image)}}}}};
    body["messages"] = json::array{json::object{{"role", "user"}, {"content", std::move(content)}}};
    if (p.max_tokens) body["max_tokens"] = *p.max_tokens;
    if (p.temperature) body["temperature"] = *p.temperature;
    std::string text = json::serialize(body);  // named: not a temporary in the co_await (GCC 12)
    co_return co_await detail::async_post_json(impl_->side, "/chat/completions", std::move(text), &parse_description);
}

std::string VLMClient::describe(std::string image, std::string prompt, std::string mime) {
    auto& rt = impl_->options.runtime ? *impl_->options.runtime : rath::async::Runtime::default_runtime();
    return rath::async::block_on(rt, async_describe(std::move(image), std::move(prompt), std::move(mime)));
}

std::string VLMClient::describe_path(const std::filesystem::path& path, std::string prompt) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ProviderConfigError("cannot read image file " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return describe(ss.str(), std::move(prompt), guess_image_mime(path));
}

VLMClient::VLMClient(VLMProvider provider, ChatClientOptions options)
    : impl_(std::make_unique<const detail::SideClient<VLMProvider>>(std::move(provider), std::move(options),
                                                          &config::ConfigStore::vlm_provider, "VLMProvider", "llm.vlm_provider")) {}

VLMClient::~VLMClient() = default;

const VLMProvider& VLMClient::provider() const noexcept { return impl_->provider; }

}  // namespace rath::llm
