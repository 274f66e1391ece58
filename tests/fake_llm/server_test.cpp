// The embedded server over real loopback HTTP: wire shapes of both providers,
// streaming, the fan-out workload, faults, scripts, routes and counters.
#include <rath/async/runtime.hpp>
#include <rath/fake_llm/server.hpp>

#include "fake_llm/http_client.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

namespace json = boost::json;
using namespace rath::fake_llm;
using rath::fake_llm::test::HttpClient;
using rath::fake_llm::test::keys;
using rath::fake_llm::test::parse_sse;

namespace {

const std::string user_text = "please count the words of session 42 w w w w w w";

json::array fanout_messages(bool tool_turn) {
    json::array m{json::object{{"role", "system"}, {"content", "You count words."}},
                  json::object{{"role", "user"}, {"content", user_text}}};
    if (tool_turn) {
        m.push_back(json::parse(R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"word_count","arguments":"{}"}}]})"));
        m.push_back(json::object{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "12"}});
    }
    return m;
}

std::string chat_body(bool tool_turn, bool stream = false, bool include_usage = false) {
    json::object b{{"model", "fake-model"}, {"messages", fanout_messages(tool_turn)}};
    if (stream) b["stream"] = true;
    if (include_usage) b["stream_options"] = json::object{{"include_usage", true}};
    return json::serialize(b);
}

std::string anthropic_body(bool tool_turn, bool stream = false) {
    json::array m{json::object{{"role", "user"}, {"content", user_text}}};
    if (tool_turn) {
        m.push_back(json::parse(R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"word_count","input":{}}]})"));
        m.push_back(json::parse(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"12"}]})"));
    }
    json::object b{{"model", "claude-fake"}, {"max_tokens", 256}, {"system", "You count words."}, {"messages", m}};
    if (stream) b["stream"] = true;
    return json::serialize(b);
}

const std::vector<std::pair<std::string, std::string>> anthropic_headers{{"anthropic-version", "2023-06-01"},
                                                                         {"x-api-key", "sk-fake"}};

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string fixture(const std::string& rel) { return slurp(std::string(RATH_SOURCE_DIR) + "/../shared/fixtures/wire/" + rel); }

struct Running {
    explicit Running(ServerOptions o = {}) : server(std::move(o)) { port = server.start(); }
    Server server;
    std::uint16_t port = 0;
};

}  // namespace

TEST_SUITE("fake_llm/server") {

TEST_CASE("the default workload answers a user message with a word_count tool call") {
    Running s;
    CHECK(s.server.base_url() == "http://127.0.0.1:" + std::to_string(s.port) + "/v1");
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false));
    REQUIRE(r.status == 200);
    CHECK(r.headers["content-type"] == "application/json");
    auto v = json::parse(r.body);
    // The exact bytes of the peers' server, `created` aside.
    auto created = v.at("created").as_int64();
    CHECK(std::abs(created - static_cast<std::int64_t>(std::time(nullptr))) < 10);
    std::string expected =
        R"({"id":"chatcmpl-fake-2","object":"chat.completion","created":)" + std::to_string(created) +
        R"(,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"word_count","arguments":"{\"text\":\"please count the words of session 42 w w w w w w\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":24,"completion_tokens":21,"total_tokens":45},"system_fingerprint":null})";
    CHECK(r.body == expected);
}

TEST_CASE("a tool result gets the final text done with the tool content") {
    Running s;
    HttpClient c(s.port);
    auto v = json::parse(c.post("/v1/chat/completions", chat_body(true)).body);
    auto& msg = v.at("choices").at(0).at("message");
    CHECK(msg.at("content") == "done: 12");
    CHECK_FALSE(msg.as_object().contains("tool_calls"));
    CHECK(v.at("choices").at(0).at("finish_reason") == "stop");
    // prompt: (3+4) + (13+4) + (0+4) + (1+4) = 33; completion: words("done: 12") = 2
    CHECK(v.at("usage") == json::parse(R"({"prompt_tokens":33,"completion_tokens":2,"total_tokens":35})"));
    // any other last role gets "done: "
    auto other = json::parse(c.post("/v1/chat/completions", R"({"messages":[{"role":"assistant","content":"x"}]})").body);
    CHECK(other.at("choices").at(0).at("message").at("content") == "done: ");
    CHECK(other.at("model") == "fake-model");
}

TEST_CASE("the chat completion has the fields of a real one") {
    Running s;
    HttpClient c(s.port);
    auto ours = json::parse(c.post("/v1/chat/completions", chat_body(true)).body);
    auto real = json::parse(fixture("openai/chat_nonstream_text.json"));
    CHECK(keys(ours) == keys(real));
    CHECK(keys(ours.at("choices").at(0)) == keys(real.at("choices").at(0)));
    CHECK(keys(ours.at("choices").at(0).at("message")) == keys(real.at("choices").at(0).at("message")));
    for (auto k : {"prompt_tokens", "completion_tokens", "total_tokens"}) CHECK(ours.at("usage").as_object().contains(k));
}

TEST_CASE("streaming chat completions end with DONE and carry usage when asked") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false, true, true));
    REQUIRE(r.status == 200);
    CHECK(r.error == boost::system::error_code());
    CHECK(r.chunked);
    CHECK(r.headers["content-type"] == "text/event-stream; charset=utf-8");
    auto events = parse_sse(r.body);
    REQUIRE(events.size() == 7);  // role+call, 3 argument pieces, finish, usage, [DONE]
    CHECK(events.back().data == "[DONE]");
    std::string args;
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
        auto v = json::parse(events[i].data);
        CHECK(v.at("object") == "chat.completion.chunk");
        CHECK(v.at("id") == "chatcmpl-fake-2");
        CHECK(v.as_object().contains("usage"));
        if (i + 2 < events.size()) {
            CHECK(v.at("usage").is_null());
            auto& delta = v.at("choices").at(0).at("delta").as_object();
            if (delta.contains("tool_calls")) args += json::value_to<std::string>(delta.at("tool_calls").at(0).at("function").at("arguments"));
        }
    }
    auto first = json::parse(events[0].data).at("choices").at(0).at("delta");
    CHECK(first.at("role") == "assistant");
    CHECK(first.at("tool_calls").at(0).at("id") == "call_1");
    CHECK(first.at("tool_calls").at(0).at("function").at("name") == "word_count");
    CHECK(args == R"({"text":"please count the words of session 42 w w w w w w"})");
    CHECK(json::parse(events[4].data).at("choices").at(0).at("finish_reason") == "tool_calls");
    auto usage = json::parse(events[5].data);
    CHECK(usage.at("choices").as_array().empty());
    CHECK(usage.at("usage") == json::parse(R"({"prompt_tokens":24,"completion_tokens":21,"total_tokens":45})"));
}

TEST_CASE("streaming without include_usage has no usage fields") {
    Running s;
    HttpClient c(s.port);
    auto events = parse_sse(c.post("/v1/chat/completions", chat_body(true, true)).body);
    REQUIRE(events.size() == 6);  // role, 3 text pieces, finish, [DONE]
    std::string text;
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
        auto v = json::parse(events[i].data);
        CHECK_FALSE(v.as_object().contains("usage"));
        auto& delta = v.at("choices").at(0).at("delta").as_object();
        if (delta.contains("content")) text += json::value_to<std::string>(delta.at("content"));
    }
    CHECK(text == "done: 12");
    CHECK(events.back().data == "[DONE]");
}

TEST_CASE("the stream chunks have the fields of real ones") {
    Running s;
    HttpClient c(s.port);
    auto ours = parse_sse(c.post("/v1/chat/completions", chat_body(true, true)).body);
    auto real = parse_sse(fixture("openai/chat_stream_text_usage.sse"));
    REQUIRE(ours.size() > 2);
    auto o = json::parse(ours[1].data), t = json::parse(real[1].data);
    CHECK(keys(o) == keys(t));
    CHECK(keys(o.at("choices").at(0)) == keys(t.at("choices").at(0)));
    CHECK(keys(json::parse(ours[0].data).at("choices").at(0).at("delta")) == keys(json::parse(real[0].data).at("choices").at(0).at("delta")));
}

TEST_CASE("anthropic messages without streaming return tool_use blocks") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/messages", anthropic_body(false), anthropic_headers);
    REQUIRE(r.status == 200);
    auto v = json::parse(r.body);
    auto real = json::parse(fixture("anthropic/messages_nonstream_parallel_tool_use.json"));
    auto sorted = [](std::vector<std::string> k) {
        std::sort(k.begin(), k.end());
        return k;
    };
    CHECK(sorted(keys(v)) == sorted(keys(real)));
    CHECK(v.at("type") == "message");
    CHECK(v.at("model") == "claude-fake");
    CHECK(v.at("stop_reason") == "tool_use");
    auto& block = v.at("content").at(0);
    CHECK(sorted(keys(block)) == sorted(keys(real.at("content").at(1))));
    CHECK(block.at("type") == "tool_use");
    CHECK(block.at("name") == "word_count");
    CHECK(block.at("input") == json::object{{"text", user_text}});
    CHECK(json::value_to<std::string>(block.at("id")).rfind("toolu_", 0) == 0);
    // input: (3+4) system + (13+4) user = 24; output: 13 words of arguments + 8
    CHECK(v.at("usage").at("input_tokens") == 24);
    CHECK(v.at("usage").at("output_tokens") == 21);
    auto final = json::parse(c.post("/v1/messages", anthropic_body(true), anthropic_headers).body);
    CHECK(final.at("stop_reason") == "end_turn");
    CHECK(final.at("content") == json::parse(R"([{"type":"text","text":"done: 12"}])"));
}

TEST_CASE("anthropic streaming follows the official event sequence") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/messages", anthropic_body(false, true), anthropic_headers);
    REQUIRE(r.status == 200);
    auto events = parse_sse(r.body);
    std::vector<std::string> names;
    for (auto& e : events) {
        names.push_back(e.event);
        CHECK(json::value_to<std::string>(json::parse(e.data).at("type")) == e.event);  // every data names its own event
    }
    std::vector<std::string> expected{"message_start", "content_block_start", "ping", "content_block_delta",
                                      "content_block_delta", "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"};
    CHECK(names == expected);
    auto start = json::parse(events[0].data).at("message");
    CHECK(start.at("content").as_array().empty());
    CHECK(start.at("usage").at("input_tokens") == 24);
    auto block = json::parse(events[1].data);
    CHECK(block.at("content_block").at("type") == "tool_use");
    CHECK(block.at("content_block").at("input").as_object().empty());
    std::string partial;
    for (std::size_t i = 3; i < 7; ++i) {
        auto d = json::parse(events[i].data).at("delta");
        CHECK(d.at("type") == "input_json_delta");
        partial += json::value_to<std::string>(d.at("partial_json"));
    }
    CHECK(json::parse(partial) == json::object{{"text", user_text}});
    auto delta = json::parse(events[8].data);
    CHECK(delta.at("delta").at("stop_reason") == "tool_use");
    CHECK(delta.at("usage").at("output_tokens") == 21);

    // A text answer streams text_delta events into a text block.
    auto text = parse_sse(c.post("/v1/messages", anthropic_body(true, true), anthropic_headers).body);
    std::string joined;
    for (auto& e : text)
        if (e.event == "content_block_delta") {
            auto d = json::parse(e.data).at("delta");
            CHECK(d.at("type") == "text_delta");
            joined += json::value_to<std::string>(d.at("text"));
        }
    CHECK(joined == "done: 12");
    CHECK(json::parse(text[1].data).at("content_block") == json::parse(R"({"type":"text","text":""})"));
    CHECK(text.back().event == "message_stop");
}

TEST_CASE("the 429 fault carries retry-after and each provider's error body") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "429"}, {"x-fake-retry-after", "7"}});
    CHECK(r.status == 429);
    CHECK(r.headers["retry-after"] == "7");
    auto e = json::parse(r.body).at("error");
    CHECK(keys(e) == keys(json::parse(fixture("errors/openai_401_invalid_api_key.json")).at("error")) );
    CHECK(e.at("code") == "rate_limit_exceeded");
    auto a = c.post("/v1/messages", anthropic_body(false), {{"x-fake-fault", "429"}, {"anthropic-version", "2023-06-01"}});
    CHECK(a.status == 429);
    CHECK(a.headers["retry-after"] == "1");
    auto ab = json::parse(a.body);
    CHECK(keys(ab) == keys(json::parse(fixture("errors/anthropic_429_rate_limit.json"))));
    CHECK(ab.at("error").at("type") == "rate_limit_error");
}

TEST_CASE("the 500 and 529 faults use each provider's error shape") {
    Running s;
    HttpClient c(s.port);
    auto r500 = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "500"}});
    CHECK(r500.status == 500);
    CHECK(json::parse(r500.body).at("error").at("type") == "server_error");
    auto r529 = c.post("/v1/messages", anthropic_body(false), {{"x-fake-fault", "529"}});
    CHECK(r529.status == 529);
    CHECK(json::parse(r529.body) == json::parse(fixture("errors/anthropic_529_overloaded.json")));
    auto a500 = c.post("/v1/messages", anthropic_body(false), {{"x-fake-fault", "500"}});
    CHECK(json::parse(a500.body).at("error").at("type") == "api_error");
    // the connection stays usable after error responses
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("an unknown fault header is a 400 naming the known faults") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "explode"}});
    CHECK(r.status == 400);
    CHECK(json::value_to<std::string>(json::parse(r.body).at("error").at("message")).find("429, 500, 529, reset") != std::string::npos);
    auto l = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-latency-ms", "soon"}});
    CHECK(l.status == 400);
}

TEST_CASE("the reset fault cuts the connection mid-body") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "reset"}});
    CHECK(r.status == 200);  // the head arrived
    CHECK(r.error);          // the body did not
    auto full = std::stoul(r.headers["content-length"]);
    CHECK(r.body.size() < full);
    c.connect();
    auto st = c.post("/v1/chat/completions", chat_body(false, true, true), {{"x-fake-fault", "reset"}});
    CHECK(st.error);
    CHECK(st.body.find("[DONE]") == std::string::npos);
    c.connect();
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("the truncate fault ends a stream without its end") {
    Running s;
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", chat_body(false, true, true), {{"x-fake-fault", "truncate"}});
    CHECK(r.status == 200);
    CHECK_FALSE(r.error);  // the HTTP message itself is complete
    auto events = parse_sse(r.body);
    CHECK(events.size() == 3);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    CHECK(r.body.find("finish_reason\":\"tool_calls") == std::string::npos);
    auto a = c.post("/v1/messages", anthropic_body(false, true), {{"x-fake-fault", "truncate"}});
    CHECK(a.body.find("message_stop") == std::string::npos);
    CHECK(a.body.find("message_start") != std::string::npos);
    auto j = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "truncate"}});
    CHECK(j.status == 200);
    CHECK_THROWS(json::parse(j.body));
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("the stream-error fault puts an error event inside a 200 stream") {
    Running s;
    HttpClient c(s.port);
    auto a = c.post("/v1/messages", anthropic_body(true, true), {{"x-fake-fault", "stream-error"}});
    CHECK(a.status == 200);
    auto events = parse_sse(a.body);
    REQUIRE(events.size() >= 2);
    CHECK(events.back().event == "error");
    auto real = parse_sse(fixture("anthropic/messages_stream_error_overloaded.sse"));
    CHECK(json::parse(events.back().data) == json::parse(real[0].data));
    CHECK(events.front().event == "message_start");
    auto o = c.post("/v1/chat/completions", chat_body(true, true), {{"x-fake-fault", "stream-error"}});
    auto oe = parse_sse(o.body);
    CHECK(json::parse(oe.back().data).at("error").at("type") == "server_error");
    CHECK(o.body.find("[DONE]") == std::string::npos);
    // without streaming the same fault is a 500
    CHECK(c.post("/v1/chat/completions", chat_body(true), {{"x-fake-fault", "stream-error"}}).status == 500);
}

TEST_CASE("the bad-tool-json fault breaks the tool arguments") {
    Running s;
    HttpClient c(s.port);
    auto v = json::parse(c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "bad-tool-json"}}).body);
    auto args = json::value_to<std::string>(v.at("choices").at(0).at("message").at("tool_calls").at(0).at("function").at("arguments"));
    CHECK(args.rfind("{\"text\":", 0) == 0);
    CHECK_THROWS(json::parse(args));
    auto a = json::parse(c.post("/v1/messages", anthropic_body(false), {{"x-fake-fault", "bad-tool-json"}}).body);
    CHECK(a.at("content").at(0).at("input").is_string());  // the body stays JSON; the input does not parse
    CHECK_THROWS(json::parse(json::value_to<std::string>(a.at("content").at(0).at("input"))));
}

TEST_CASE("unknown routes answer 404 with an openai error body") {
    Running s;
    HttpClient c(s.port);
    auto r = c.get("/v1/nothing-here");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body) == json::parse(R"J({"error":{"message":"Invalid URL (GET /v1/nothing-here)","type":"invalid_request_error","param":null,"code":null}})J"));
    CHECK(c.get("/v1/chat/completions").status == 404);  // wrong method
    CHECK(c.get("/health").body == "ok");
    CHECK(s.server.stats().not_found == 2);
}

TEST_CASE("malformed requests answer 400 and never crash the server") {
    Running s;
    HttpClient c(s.port);
    auto bad = c.post("/v1/chat/completions", "{\"messages\": [");
    CHECK(bad.status == 400);
    CHECK(json::parse(bad.body).at("error").at("type") == "invalid_request_error");
    CHECK(c.post("/v1/chat/completions", R"({"model":"m"})").status == 400);
    CHECK(c.post("/v1/chat/completions", R"({"messages":[]})").status == 400);
    CHECK(c.post("/v1/chat/completions", R"({"messages":[42]})").status == 400);
    CHECK(c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})").status == 400);
    CHECK(c.post("/v1/chat/completions", "[1,2]").status == 400);
    auto a = c.post("/v1/messages", "nope");
    CHECK(a.status == 400);
    CHECK(json::parse(a.body).at("type") == "error");
    CHECK(s.server.stats().errors == 7);
    // garbage that is not HTTP at all
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket raw(io);
    raw.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    boost::asio::write(raw, boost::asio::buffer(std::string("GARBAGE\r\n\r\n")));
    std::string reply(512, '\0');
    boost::system::error_code ec;
    std::size_t n = boost::asio::read(raw, boost::asio::buffer(reply), ec);
    CHECK(reply.substr(0, n).rfind("HTTP/1.1 400", 0) == 0);
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("a client that expects 100-continue is told to send its body") {
    Running s;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket raw(io);
    raw.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    std::string body = chat_body(false);
    std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                       "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    boost::asio::write(raw, boost::asio::buffer(head));
    std::string interim(25, '\0');
    boost::asio::read(raw, boost::asio::buffer(interim));
    CHECK(interim == "HTTP/1.1 100 Continue\r\n\r\n");
    boost::asio::write(raw, boost::asio::buffer(body));
    boost::beast::flat_buffer buf;
    boost::beast::http::response<boost::beast::http::string_body> res;
    boost::beast::http::read(raw, buf, res);
    CHECK(res.result_int() == 200);
    CHECK(json::parse(res.body()).at("choices").at(0).at("finish_reason") == "tool_calls");
}

TEST_CASE("a request whose body arrives in pieces is read whole") {
    Running s;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket raw(io);
    raw.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    std::string body = chat_body(true);
    std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    boost::asio::write(raw, boost::asio::buffer(head + body.substr(0, 10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    boost::asio::write(raw, boost::asio::buffer(body.substr(10, 40)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    boost::asio::write(raw, boost::asio::buffer(body.substr(50)));
    boost::beast::flat_buffer buf;
    boost::beast::http::response<boost::beast::http::string_body> res;
    boost::beast::http::read(raw, buf, res);
    CHECK(res.result_int() == 200);
    CHECK(json::parse(res.body()).at("choices").at(0).at("message").at("content") == "done: 12");
}

TEST_CASE("a header cut into pieces and two requests in one write are both answered in order") {
    Running s;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket raw(io);
    raw.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    const std::string body = chat_body(true);
    const std::string one = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Fake-Latency-Ms: 1\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    for (std::size_t i = 0; i < one.size(); i += 9) {  // the first request, nine bytes at a time
        boost::asio::write(raw, boost::asio::buffer(one.substr(i, 9)));
        if (i < 90) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    boost::asio::write(raw, boost::asio::buffer(one + one));  // then two in one write
    boost::beast::flat_buffer buf;
    for (int k = 0; k < 3; ++k) {
        boost::beast::http::response<boost::beast::http::string_body> res;
        boost::beast::http::read(raw, buf, res);
        CHECK(res.result_int() == 200);
        CHECK(json::parse(res.body()).at("choices").at(0).at("message").at("content") == "done: 12");
    }
}

TEST_CASE("content parts and tool results count like the peers") {
    Running s;
    HttpClient c(s.port);
    auto body = R"({"messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"text","text":" c"}]}]})";
    auto v = json::parse(c.post("/v1/chat/completions", body).body);
    auto args = json::value_to<std::string>(v.at("choices").at(0).at("message").at("tool_calls").at(0).at("function").at("arguments"));
    CHECK(args == R"({"text":"a b c"})");
    CHECK(v.at("usage").at("prompt_tokens") == 7);
    auto t = json::parse(c.post("/v1/chat/completions", R"({"messages":[{"role":"tool","content":[{"type":"text","text":"x"},{"content":"y"}]}]})").body);
    CHECK(t.at("choices").at(0).at("message").at("content") == "done: xy");
}

TEST_CASE("latency and token delay hold the response back without blocking others") {
    Running s({.token_delay = std::chrono::milliseconds(2)});
    HttpClient c(s.port);
    auto t0 = std::chrono::steady_clock::now();
    auto r = c.post("/v1/chat/completions", chat_body(false), {{"x-fake-latency-ms", "60"}});
    CHECK(r.status == 200);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(60));  // a timer never fires early
    // With a token delay every SSE event travels in its own chunk.
    auto st = c.post("/v1/chat/completions", chat_body(false, true, true));
    CHECK(st.chunks == parse_sse(st.body).size() + 1);  // + the last zero chunk
    auto fast = c.post("/v1/chat/completions", chat_body(false, true, true), {{"x-fake-token-delay-ms", "0"}});
    CHECK(fast.chunks == 2);  // one data chunk, then the end
    CHECK(fast.body.size() == st.body.size());
    // A slow request does not hold up another connection on the same io thread.
    std::thread slow([&] {
        HttpClient other(s.port);
        CHECK(other.post("/v1/chat/completions", chat_body(false), {{"x-fake-latency-ms", "1500"}}).status == 200);
    });
    while (s.server.stats().in_flight == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(c.post("/v1/chat/completions", chat_body(true)).status == 200);
    CHECK(s.server.stats().in_flight == 1);  // the slow one is still waiting
    slow.join();
}

TEST_CASE("embeddings are deterministic unit vectors in float and base64") {
    Running s({.embedding_dimensions = 64});
    HttpClient c(s.port);
    auto r = c.post("/v1/embeddings", R"({"model":"text-embedding-3-small","input":["the cat sat","the cat sat on the mat","quantum chromodynamics"],"encoding_format":"float"})");
    REQUIRE(r.status == 200);
    auto v = json::parse(r.body);
    CHECK(v.at("object") == "list");
    CHECK(v.at("model") == "text-embedding-3-small");
    CHECK(v.at("usage") == json::parse(R"({"prompt_tokens":11,"total_tokens":11})"));
    auto vec = [&](std::size_t i) {
        std::vector<double> out;
        for (auto& x : v.at("data").at(i).at("embedding").as_array()) out.push_back(x.to_number<double>());
        return out;
    };
    auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
        double d = 0;
        for (std::size_t i = 0; i < a.size(); ++i) d += a[i] * b[i];
        return d;
    };
    auto a = vec(0), b = vec(1), q = vec(2);
    CHECK(a.size() == 64);
    CHECK(dot(a, a) == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(dot(a, b) > dot(a, q));  // texts sharing words are closer
    CHECK(v.at("data").at(1).at("index") == 1);
    auto again = json::parse(c.post("/v1/embeddings", R"({"input":"the cat sat","encoding_format":"float"})").body);
    CHECK(again.at("data").at(0).at("embedding") == v.at("data").at(0).at("embedding"));
    auto b64 = json::parse(c.post("/v1/embeddings", R"({"input":"the cat sat","encoding_format":"base64","dimensions":8})").body);
    auto text = json::value_to<std::string>(b64.at("data").at(0).at("embedding"));
    CHECK(text.size() == 44);  // 8 float32 = 32 bytes -> 44 base64 characters
    CHECK(c.post("/v1/embeddings", R"({"input":[]})").status == 400);
    CHECK(c.post("/v1/embeddings", R"({"input":"x","encoding_format":"hex"})").status == 400);
    CHECK(s.server.stats().embeddings == 3);
}

TEST_CASE("models lists the configured model in both provider shapes") {
    Running s({.model = "my-model"});
    HttpClient c(s.port);
    auto o = json::parse(c.get("/v1/models").body);
    CHECK(o.at("object") == "list");
    CHECK(o.at("data").at(0).at("id") == "my-model");
    CHECK(o.at("data").at(0).at("object") == "model");
    auto a = json::parse(c.get("/v1/models", {{"anthropic-version", "2023-06-01"}}).body);
    CHECK(a.at("data").at(0).at("type") == "model");
    CHECK(a.at("has_more") == false);
    CHECK(json::parse(c.get("/v1/models/my-model").body).at("id") == "my-model");
    CHECK(c.get("/v1/models/other").status == 404);
    // a request without a model is answered with the configured one
    CHECK(json::parse(c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}]})").body).at("model") == "my-model");
}

TEST_CASE("stats count requests replies and faults like the peers") {
    Running s;
    HttpClient c(s.port);
    c.post("/v1/chat/completions", chat_body(false));
    c.post("/v1/chat/completions", chat_body(true, true));
    c.post("/v1/messages", anthropic_body(false));
    c.post("/v1/chat/completions", chat_body(false), {{"x-fake-fault", "500"}});
    auto st = s.server.stats();
    CHECK(st.requests == 4);
    CHECK(st.tool_call_replies == 3);  // the 500 had decided on a tool call too
    CHECK(st.final_replies == 1);
    CHECK(st.streamed == 1);
    CHECK(st.faults == 1);
    CHECK(st.in_flight == 0);
    CHECK(st.connections == 1);
    auto v = json::parse(c.get("/stats").body);
    for (auto k : {"requests", "tool_call_replies", "final_replies", "streamed", "errors", "aborted", "not_found", "in_flight",
                   "in_flight_peak", "connections", "connections_peak", "connections_total", "latency_ms", "cpu_s", "rss_mb"})
        CHECK_MESSAGE(v.as_object().contains(k), k);
    CHECK(v.at("requests") == 4);
    CHECK(json::parse(c.post("/stats/reset", "").body).at("requests") == 0);
    CHECK(json::parse(c.post("/config?latency_ms=5", "").body).at("latency_ms") == 5);
    CHECK(json::parse(c.get("/stats").body).at("latency_ms") == 5);
}

TEST_CASE("script rules match the last message and ordered responses follow") {
    Running s({.mode = Mode::script, .script = R"({
      "rules": [
        {"match": {"role": "user", "contains": "weather"},
         "respond": {"tool_calls": [{"id": "call_w", "name": "get_weather", "arguments": {"city": "{{last}}"}}]}},
        {"match": {"role": "tool", "tool_call_id": "call_w"}, "respond": {"text": "Forecast: {{last}}", "usage": {"prompt_tokens": 11, "completion_tokens": 2}}},
        {"match": {"equals": "flaky"}, "respond": {"fault": "429", "retry_after": 0}, "times": 1}
      ],
      "responses": [{"text": "first", "finish_reason": "length"}, {"text": "second"}],
      "when_exhausted": "repeat_last"
    })"});
    HttpClient c(s.port);
    auto msg = [](std::string role, std::string content, std::string extra = "") {
        return R"({"model":"m","messages":[{"role":")" + role + R"(","content":)" + json::serialize(json::value(content)) + extra + "}]}";
    };
    auto w = json::parse(c.post("/v1/chat/completions", msg("user", "weather in \"Paris\"")).body);
    auto call = w.at("choices").at(0).at("message").at("tool_calls").at(0);
    CHECK(call.at("id") == "call_w");
    CHECK(json::parse(json::value_to<std::string>(call.at("function").at("arguments"))) == json::object{{"city", "weather in \"Paris\""}});
    auto t = json::parse(c.post("/v1/chat/completions", msg("tool", "sunny", R"(,"tool_call_id":"call_w")")).body);
    CHECK(t.at("choices").at(0).at("message").at("content") == "Forecast: sunny");
    CHECK(t.at("usage") == json::parse(R"({"prompt_tokens":11,"completion_tokens":2,"total_tokens":13})"));
    CHECK(c.post("/v1/chat/completions", msg("user", "flaky")).status == 429);
    auto first = json::parse(c.post("/v1/chat/completions", msg("user", "flaky")).body);  // the rule fired its one time
    CHECK(first.at("choices").at(0).at("message").at("content") == "first");
    CHECK(first.at("choices").at(0).at("finish_reason") == "length");
    CHECK(json::parse(c.post("/v1/chat/completions", msg("user", "x")).body).at("choices").at(0).at("message").at("content") == "second");
    CHECK(json::parse(c.post("/v1/chat/completions", msg("user", "x")).body).at("choices").at(0).at("message").at("content") == "second");
    // The same script drives the Anthropic endpoint.
    auto a = json::parse(c.post("/v1/messages", R"({"model":"c","max_tokens":5,"messages":[{"role":"user","content":"weather?"}]})").body);
    CHECK(a.at("content").at(0).at("type") == "tool_use");
    CHECK(a.at("content").at(0).at("input") == json::object{{"city", "weather?"}});
}

TEST_CASE("an exhausted script answers 500 naming the script") {
    Running s({.mode = Mode::script, .script = R"([{"text": "only"}])"});
    HttpClient c(s.port);
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
    auto r = c.post("/v1/chat/completions", chat_body(false));
    CHECK(r.status == 500);
    CHECK(json::value_to<std::string>(json::parse(r.body).at("error").at("message")).find("all 1 ordered responses were used") != std::string::npos);
    s.server.reset_stats();  // also rewinds the script
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("a bad script stops the server from starting") {
    Server bad({.mode = Mode::script, .script = "{\"responses\": [\n{\"fault\": \"nope\"}]}"});
    CHECK_THROWS_AS(bad.start(), ScriptError);
    CHECK_FALSE(bad.running());
    Server missing({.mode = Mode::script, .script_path = "/nonexistent/script.json"});
    CHECK_THROWS_WITH_AS(missing.start(), "/nonexistent/script.json: cannot open the script file", ScriptError);
}

TEST_CASE("script responses can stream with their own chunking and delays") {
    Running s({.mode = Mode::script, .script = R"([{"text": "abcdef", "chunks": 2, "token_delay_ms": 1, "latency_ms": 1}])"});
    HttpClient c(s.port);
    auto r = c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stream":true})");
    auto events = parse_sse(r.body);
    REQUIRE(events.size() == 5);  // role, "abc", "def", finish, [DONE]
    CHECK(json::parse(events[1].data).at("choices").at(0).at("delta").at("content") == "abc");
    CHECK(r.chunks == events.size() + 1);
}

TEST_CASE("echo mode repeats the last message") {
    Running s({.mode = Mode::echo});
    HttpClient c(s.port);
    auto v = json::parse(c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hello there"}]})").body);
    CHECK(v.at("choices").at(0).at("message").at("content") == "hello there");
    CHECK(v.at("usage").at("completion_tokens") == 2);
    auto st = parse_sse(c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hello there friend"}],"stream":true})").body);
    REQUIRE(st.size() == 6);  // role, one piece per word, finish, [DONE]
    CHECK(json::parse(st[2].data).at("choices").at(0).at("delta").at("content") == " there");
}

TEST_CASE("several io threads serve many concurrent connections") {
    Running s({.threads = 2});
    constexpr int clients = 8, per_client = 25;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
            HttpClient c(s.port);
            for (int k = 0; k < per_client; ++k) {
                auto r = c.post("/v1/chat/completions", chat_body(k % 2 == 1, i % 2 == 0, true));
                if (r.status == 200 && !r.error) ++ok;
            }
        });
    for (auto& t : threads) t.join();
    CHECK(ok == clients * per_client);
    auto st = s.server.stats();
    CHECK(st.requests == clients * per_client);
    CHECK(st.connections_total == clients);
    CHECK(st.tool_call_replies == clients * 13);  // the even-numbered requests of each client (0, 2, ..., 24)
}

TEST_CASE("the server stops while responses are still delayed") {
    Server server({.latency = std::chrono::milliseconds(10'000)});
    auto port = server.start();
    std::thread waiting([&] {
        HttpClient c(port);
        auto r = c.post("/v1/chat/completions", chat_body(false));
        CHECK(r.error);  // the connection closed instead of answering
    });
    while (server.stats().in_flight == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
    waiting.join();
    CHECK_FALSE(server.running());
    server.stop();  // idempotent
    // It can be started again.
    auto again = server.start();
    server.set_latency(std::chrono::milliseconds(0));
    HttpClient c(again);
    CHECK(c.post("/v1/chat/completions", chat_body(false)).status == 200);
}

TEST_CASE("a coroutine client on a one-thread rath runtime talks to the embedded server") {
    // The server has its own io threads, so a client on any runtime (even one with a
    // single thread that then blocks on the result from outside) cannot deadlock it.
    Running s;
    rath::async::Runtime rt({.threads = 1, .blocking_threads = 1, .name = "fake-llm-test"});
    namespace http = boost::beast::http;
    auto port = s.port;
    auto one_call = [port](bool tool_turn) -> boost::asio::awaitable<std::string> {
        auto ex = co_await boost::asio::this_coro::executor;
        boost::asio::ip::tcp::socket sock(ex);
        co_await sock.async_connect({boost::asio::ip::make_address("127.0.0.1"), port}, boost::asio::use_awaitable);
        http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
        req.set(http::field::host, "127.0.0.1");
        req.body() = chat_body(tool_turn, true, true);
        req.prepare_payload();
        co_await http::async_write(sock, req, boost::asio::use_awaitable);
        boost::beast::flat_buffer buf;
        http::response<http::string_body> res;
        co_await http::async_read(sock, buf, res, boost::asio::use_awaitable);
        co_return res.body();
    };
    std::vector<rath::async::Lazy<std::string>> calls;
    for (int i = 0; i < 16; ++i) calls.push_back(rt.submit(one_call(i % 2 == 1)));
    for (auto& c : calls) CHECK(parse_sse(c.get()).back().data == "[DONE]");
    CHECK(s.server.stats().streamed == 16);
    rt.shutdown();
}

TEST_CASE("a second server on a busy port fails with a clear error") {
    Running s;
    Server clash({.port = s.port});
    CHECK_THROWS_AS(clash.start(), ServerError);
    try {
        clash.start();
    } catch (const ServerError& e) {
        CHECK(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(s.port)) != std::string::npos);
    }
}

}  // TEST_SUITE
