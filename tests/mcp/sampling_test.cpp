// sampling/createMessage answered through a rath provider (the fake LLM server over
// real HTTP) only when the user's policy allows it.
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/mcp/sampling.hpp>
#include <rath/mcp/stdio_transport.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;
using namespace std::chrono_literals;

namespace {

json::object J(const std::string& text) { return json::parse(text).as_object(); }

std::unique_ptr<Transport> test_server() {
    StdioServerParams p;
    p.command = {std::string(RATH_BINARY_DIR) + "/bin/mcp_test_server"};
    p.close_grace = 500ms;
    return make_stdio_transport(std::move(p));
}

std::string text_of(const CallToolResult& r) {
    std::string out;
    for (const auto& b : r.content)
        if (b.type == "text" && b.text) out += *b.text;
    return out;
}

}  // namespace

TEST_CASE("a sampling request reaches the provider when allowed and is refused with -1 otherwise") {
    rath::fake_llm::Server llm({.mode = rath::fake_llm::Mode::echo});
    llm.start();
    rath::llm::Provider provider;
    provider.base_url = llm.base_url();
    provider.api_key = "sk-fake-local";
    provider.model = "fake-model";
    std::atomic<int> asked{0};
    bool allow = true;
    ClientOptions opts;
    opts.sampling = sampling_through(provider, [&](const SamplingRequest& r) {
        ++asked;
        return allow && r.params.contains("messages");
    });
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server(), opts);
    CallToolResult yes, no;
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        yes = co_await client.async_call_tool("sample", J(R"({"prompt":"the sky is blue"})"));
        allow = false;
        no = co_await client.async_call_tool("sample", J(R"({"prompt":"secret"})"));
        co_await client.async_close();
    };
    rath::async::block_on(rt, body());
    CHECK(asked == 2);
    CHECK_FALSE(yes.is_error);
    CHECK(text_of(yes) == "sampled: the sky is blue");  // the echo model repeats the prompt
    CHECK(no.is_error);
    CHECK(text_of(no).find("User rejected sampling request") != std::string::npos);
    CHECK(text_of(no).find("-1") != std::string::npos);
    CHECK(llm.stats().requests == 1);  // the refused request never reached the model
}

TEST_CASE("sampling messages keep the system prompt and text, and refuse images") {
    SamplingRequest r{J(R"({"systemPrompt":"be brief","messages":[
        {"role":"user","content":{"type":"text","text":"hi"}},
        {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})")};
    auto m = sampling_messages(r);
    REQUIRE(m.size() == 3);
    CHECK(m[0].role == "system");
    CHECK(m[0].content == std::optional<std::string>("be brief"));
    CHECK(m[1].content == std::optional<std::string>("hi"));
    CHECK(m[2].role == "assistant");
    CHECK(m[2].content == std::optional<std::string>("a\nb"));
    SamplingRequest img{J(R"({"messages":[{"role":"user","content":{"type":"image","data":"AA==","mimeType":"image/png"}}]})")};
    CHECK_THROWS_WITH_AS(sampling_messages(img),
                         "sampling with image content is not supported: rath's chat messages carry text", McpError);
}
