// Embedding and VLM clients against a loopback server (spec §7).
#include "loopback_server.hpp"
#include "support/env.hpp"

#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/llm.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <bit>
#include <fstream>

namespace json = boost::json;
using namespace rath::llm;
using namespace rath::test;

namespace {
std::string b64_floats(std::initializer_list<float> fs) {
    std::string bytes;
    for (float f : fs) {
        auto u = std::bit_cast<std::uint32_t>(f);
        for (int i = 0; i < 4; ++i) bytes.push_back(char((u >> (8 * i)) & 0xFF));
    }
    static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8 | (unsigned char)bytes[i + 2];
        out += a[v >> 18], out += a[(v >> 12) & 63], out += a[(v >> 6) & 63], out += a[v & 63];
    }
    if (bytes.size() - i == 1) {
        unsigned v = (unsigned char)bytes[i] << 16;
        out += a[v >> 18], out += a[(v >> 12) & 63], out += "==";
    } else if (bytes.size() - i == 2) {
        unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8;
        out += a[v >> 18], out += a[(v >> 12) & 63], out += a[(v >> 6) & 63], out += '=';
    }
    return out;
}
}  // namespace

TEST_CASE("embeddings decode base64 float32 and float arrays in data order") {
    rath::test::CleanEnv env;
    rath::async::Runtime rt({.threads = 1});
    LoopbackServer server([](const RecordedRequest&, int) {
        return Reply::json(200, R"({"data":[{"index":1,"embedding":")" + b64_floats({1.5f, -2.0f, 0.25f}) +
                                    R"("},{"index":0,"embedding":[0.5,1,2]}]})");
    });
    EmbeddingClient c(EmbeddingProvider{.base_url = server.url("/v1"), .api_key = "k-1234", .dimensions = 3},
                      ChatClientOptions{.runtime = &rt});
    CHECK(c.embed({}).empty());
    CHECK(server.request_count() == 0);
    auto v = c.embed({"a", "b"});
    REQUIRE(v.size() == 2);
    CHECK(v[0] == std::vector<double>{1.5, -2.0, 0.25});
    CHECK(v[1] == std::vector<double>{0.5, 1.0, 2.0});
    auto req = server.requests().at(0);
    CHECK(req.target == "/v1/embeddings");
    CHECK(json::parse(req.body) == json::parse(R"({"model":"text-embedding-3-small","input":["a","b"],"dimensions":3,"encoding_format":"base64"})"));
    rt.shutdown();
}

TEST_CASE("empty embedding data is an error and a missing key is reported") {
    rath::test::CleanEnv env;
    rath::async::Runtime rt({.threads = 1});
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, R"({"data":[]})"); });
    EmbeddingClient c(EmbeddingProvider{.base_url = server.url(), .api_key = "k-1234"}, ChatClientOptions{.runtime = &rt});
    CHECK_THROWS_WITH_AS(c.embed_one("x"), doctest::Contains("No embedding data received"), rath::ResponseFormatError);
    CHECK(server.request_count() == 1);
    CHECK_THROWS_WITH_AS(EmbeddingClient(EmbeddingProvider{}), doctest::Contains("No API key for EmbeddingProvider"),
                         rath::ProviderConfigError);
    rt.shutdown();
}

TEST_CASE("a 200 whose body is not JSON is a response format error naming the embedding or VLM response") {
    rath::test::CleanEnv env;
    rath::async::Runtime rt({.threads = 1});
    LoopbackServer server([](const RecordedRequest&, int) { return Reply::json(200, "<html>gateway</html>"); });
    EmbeddingClient e(EmbeddingProvider{.base_url = server.url(), .api_key = "k-1234"}, ChatClientOptions{.runtime = &rt});
    CHECK_THROWS_WITH_AS(e.embed_one("x"), doctest::Contains("embedding response is not JSON"), rath::ResponseFormatError);
    VLMClient v(VLMProvider{.model = "vis", .base_url = server.url(), .api_key = "k-1234"}, ChatClientOptions{.runtime = &rt});
    CHECK_THROWS_WITH_AS(v.describe(std::string("\x89PNG", 4), "x"), doctest::Contains("VLM response is not JSON"),
                         rath::ResponseFormatError);
    rt.shutdown();
}

TEST_CASE("embedding from_config prefers the embedding entry then the default provider key") {
    rath::test::CleanEnv env;
    auto store = std::make_shared<rath::config::ConfigStore>(env.path() / "config.json");
    store->set_llm_provider("chat", {.model = "gpt-4o", .api_key = "chat-key", .base_url = "http://chat"});
    store->set_default_llm_provider("chat");
    auto p = EmbeddingProvider::from_config(std::nullopt, store);
    CHECK(p.model == default_embedding_model);
    CHECK(p.api_key == "chat-key");
    store->set_llm_provider("emb", {.model = "text-embedding-3-large", .api_key = "emb-key"});
    store->set_embedding_provider("emb");
    auto q = EmbeddingProvider::from_config(std::nullopt, store);
    CHECK(q.model == "text-embedding-3-large");
    CHECK(q.api_key == "emb-key");
}

TEST_CASE("vlm describe sends a data url and returns the caption") {
    rath::test::CleanEnv env;
    rath::async::Runtime rt({.threads = 1});
    LoopbackServer server([](const RecordedRequest&, int i) {
        if (i == 0) return Reply::json(200, R"({"choices":[{"message":{"content":"a red dot"}}]})");
        return Reply::json(200, R"({"choices":[{"message":{"content":null}}]})");
    });
    VLMClient c(VLMProvider{.model = "vis", .base_url = server.url(), .api_key = "k-1234"}, ChatClientOptions{.runtime = &rt});
    CHECK(c.describe(std::string("\x89PNG", 4), "what is it") == "a red dot");
    auto body = json::parse(server.requests().at(0).body);
    CHECK(body.at("max_tokens").as_int64() == 512);
    CHECK(body.at("messages").at(0).at("content").at(1).at("image_url").at("url") == "data:image/png;base64,iVBORw==");
    CHECK_FALSE(body.as_object().contains("stream"));
    const auto img = env.path() / "pic.JPG";
    std::ofstream(img, std::ios::binary) << "jpegbytes";
    CHECK(c.describe_path(img, "x") == "");
    CHECK(json::parse(server.requests().at(1).body).at("messages").at(0).at("content").at(1).at("image_url").at("url").as_string().starts_with("data:image/jpeg;base64,"));
    CHECK(guess_image_mime("a.webp") == "image/webp");
    CHECK(guess_image_mime("a.xyz") == "application/octet-stream");
    rt.shutdown();
}

TEST_CASE("vlm from_config needs a configured vlm provider with a model") {
    rath::test::CleanEnv env;
    auto store = std::make_shared<rath::config::ConfigStore>(env.path() / "config.json");
    CHECK_THROWS_WITH_AS(VLMProvider::from_config(std::nullopt, store), doctest::Contains("no VLM provider configured"),
                         rath::config::ConfigLookupError);
    store->set_llm_provider("v", {.api_key = "k"});
    store->set_vlm_provider("v");
    CHECK_THROWS_WITH_AS(VLMProvider::from_config(std::nullopt, store), doctest::Contains("has no model set"),
                         rath::config::ConfigLookupError);
    store->set_llm_provider("v", {.model = "gpt-4o-mini", .api_key = "k"});
    CHECK(VLMProvider::from_config(std::nullopt, store).model == "gpt-4o-mini");
}
