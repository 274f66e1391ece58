// Serves every recorded provider sample in $RATH_FIXTURES_DIR/wire/ from a loopback
// HTTP server (bodies in odd-sized pieces, status/headers from .meta.json) through
// the real clients and compares the normalised result with the sample's .expect.json.
#include "loopback_server.hpp"
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/fixtures.hpp"

#include <rath/async/runtime.hpp>
#include <rath/llm.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace rath::llm;
using namespace rath::test;

namespace {

bool ends_with(const std::string& s, std::string_view suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

struct Sample {
    fs::path body;
    fs::path expect;
    std::optional<fs::path> meta;
    bool stream = false;
    bool anthropic = false;
};

std::vector<Sample> collect_samples(const fs::path& wire) {
    std::vector<Sample> out;
    for (const auto& e : fs::recursive_directory_iterator(wire)) {
        if (!e.is_regular_file()) continue;
        const std::string name = e.path().filename().string();
        if (ends_with(name, ".expect.json") || ends_with(name, ".meta.json")) continue;
        if (!ends_with(name, ".sse") && !ends_with(name, ".json")) continue;
        Sample s;
        s.body = e.path();
        std::string stem = name.substr(0, name.rfind('.'));
        s.expect = e.path().parent_path() / (stem + ".expect.json");
        if (fs::exists(e.path().parent_path() / (stem + ".meta.json"))) s.meta = e.path().parent_path() / (stem + ".meta.json");
        s.stream = ends_with(name, ".sse");
        const std::string rel = fs::relative(e.path(), wire).string();
        s.anthropic = rel.rfind("anthropic/", 0) == 0 || rel.rfind("errors/anthropic", 0) == 0;
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.body < b.body; });
    return out;
}

json::value opt_str(const std::optional<std::string>& s) {
    return s && !s->empty() ? json::value(*s) : json::value(nullptr);
}

json::object normalise(const ChatResponse* r, const rath::ProviderError* err) {
    json::object o;
    o["content"] = nullptr;
    o["reasoning"] = nullptr;
    o["tool_calls"] = json::array{};
    o["usage"] = nullptr;
    o["error"] = nullptr;
    o["finish_reason"] = "error";
    if (r && !r->choices.empty()) {
        const auto& c = r->choices.front();
        o["content"] = opt_str(c.message.content);
        o["reasoning"] = opt_str(c.message.reasoning_content);
        json::array calls;
        if (c.message.tool_calls)
            for (const auto& t : *c.message.tool_calls)
                calls.push_back(json::object{{"id", t.id}, {"name", t.function.name}, {"arguments", t.function.arguments}});
        o["tool_calls"] = std::move(calls);
        o["finish_reason"] = std::string(to_string(c.finish_reason));
        if (r->usage)
            o["usage"] = json::object{{"prompt_tokens", r->usage->prompt_tokens},
                                      {"completion_tokens", r->usage->completion_tokens},
                                      {"total_tokens", r->usage->total_tokens}};
    }
    if (err) {
        o["finish_reason"] = "error";
        json::value ra = nullptr;
        if (err->retry_after()) ra = err->retry_after()->count();
        o["error"] = json::object{{"status", err->status()},
                                  {"type", err->type()},
                                  {"message", err->provider_message()},
                                  {"retry_after_s", ra}};
    }
    return o;
}

rath::test::Reply reply_for(const Sample& s) {
    const std::string body = read_file(s.body);
    if (s.stream) return rath::test::Reply::sse(body, 7);  // odd-sized pieces, chunked framing
    rath::test::Reply r = rath::test::Reply::json(200, body);
    r.piece = 13;
    if (s.meta) {
        json::value meta = json::parse(read_file(*s.meta));
        r.status = int(meta.at("status").to_number<int>());
        r.headers.clear();
        for (const auto& kv : meta.at("headers").as_object()) {
            std::string k(kv.key());
            // Framing is ours; the recorded values describe the original connection.
            if (k == "content-length" || k == "transfer-encoding" || k == "connection") continue;
            if (kv.value().is_array()) {
                for (const auto& v : kv.value().as_array()) r.headers.emplace_back(k, std::string(v.as_string()));
            } else {
                r.headers.emplace_back(k, std::string(kv.value().as_string()));
            }
        }
        bool has_ct = false;
        for (const auto& [k, v] : r.headers) has_ct |= k == "content-type";
        if (!has_ct) r.headers.emplace_back("content-type", "application/json");
    }
    return r;
}

json::object run_sample(const Sample& s, rath::async::Runtime& rt) {
    rath::test::LoopbackServer server([&](const rath::test::RecordedRequest&, int) { return reply_for(s); });
    ChatClientOptions opts{.runtime = &rt};
    Provider p{.api_key = "sk-test-fixture-key", .model = "fixture-model", .retry_max_attempts = 1};
    std::shared_ptr<ChatClient> client;
    if (s.anthropic) {
        p.base_url = server.url();
        client = std::make_shared<AnthropicChatClient>(p, opts);
    } else {
        p.base_url = server.url("/v1");
        client = std::make_shared<OpenAIChatClient>(p, opts);
    }
    ChatRequest req{.messages = {Message::user("hi")}};
    try {
        DeltaCallback ignore_deltas;
        if (s.stream) ignore_deltas = [](const StreamDelta&) {};  // a callback asks for the streamed form
        ChatResponse r = client->complete(req, ignore_deltas);
        return normalise(&r, nullptr);
    } catch (const rath::ProviderError& e) {
        return normalise(e.partial().get(), &e);
    }
}

void compare(const json::object& got, const json::object& want) {
    CHECK(got.at("content") == want.at("content"));
    CHECK(got.at("reasoning") == want.at("reasoning"));
    CHECK(got.at("finish_reason") == want.at("finish_reason"));
    CHECK(got.at("usage") == want.at("usage"));
    CHECK(got.at("error") == want.at("error"));
    const auto& gc = got.at("tool_calls").as_array();
    const auto& wc = want.at("tool_calls").as_array();
    REQUIRE(gc.size() == wc.size());
    for (std::size_t i = 0; i < gc.size(); ++i) {
        CHECK(gc[i].at("id") == wc[i].at("id"));
        CHECK(gc[i].at("name") == wc[i].at("name"));
        const std::string ga(gc[i].at("arguments").as_string()), wa(wc[i].at("arguments").as_string());
        boost::system::error_code e1, e2;
        json::value pg = json::parse(ga, e1), pw = json::parse(wa, e2);
        if (!e1 && !e2)
            CHECK(pg == pw);  // parsed-JSON equality when both parse
        else
            CHECK(ga == wa);
    }
}

}  // namespace

TEST_SUITE("wire_fixtures") {
    TEST_CASE("every recorded provider sample normalises to its expectation") {
        rath::test::CleanEnv env;
        const fs::path wire = fixtures_dir() / "wire";
        REQUIRE_MESSAGE(fs::is_directory(wire), "fixtures not found at " << wire.string());
        auto samples = collect_samples(wire);
        // Whatever set it is given (RATH_FIXTURES_DIR), as long as there is one.
        REQUIRE_MESSAGE(!samples.empty(), "no wire samples under " << wire.string());
        rath::async::Runtime rt({.threads = 2});
        int checked = 0;
        for (const auto& s : samples) {
            INFO("sample: " << s.body.string());
            REQUIRE_MESSAGE(fs::exists(s.expect), "sample without expectation: " << s.body.string());
            json::object want = json::parse(read_file(s.expect)).as_object();
            json::object got = run_sample(s, rt);
            INFO("got: " << json::serialize(got));
            compare(got, want);
            ++checked;
        }
        MESSAGE("wire samples checked: " << checked);
        rt.shutdown();
    }
}
