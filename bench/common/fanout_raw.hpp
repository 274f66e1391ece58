#pragma once
// The floor for the fan-out benchmark: the same two Chat Completions requests per
// session with a bare Beast client and a hand-written tool loop — no framework, no
// retries, no transcript, requests built by string concatenation and answers read
// with simdjson. One io_context per thread ("shard"); each shard owns its share of
// the sessions and of the connections. A connection is a worker coroutine that takes
// the next request from its shard's FIFO queue, so at most `connections` requests
// are in flight, exactly as with a capped connection pool.
#include "fanout_workload.hpp"
#include "server_process.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <boost/json/serialize.hpp>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace rath::bench::fanout {

namespace raw_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A JSON string literal, as Boost.JSON writes it.
inline void append_json_string(std::string& out, std::string_view s) { out += boost::json::serialize(boost::json::string_view(s)); }

// The assistant turn a request produced.
struct Turn {
    std::string content;
    std::string call_id;
    std::string call_name;
    std::string call_arguments;
    bool has_call = false;
};

inline Turn parse_message(simdjson::dom::parser& p, const std::string& body) {
    Turn t;
    simdjson::dom::element doc = p.parse(body);
    simdjson::dom::element msg = doc["choices"].at(0)["message"];
    std::string_view s;
    if (msg["content"].get(s) == simdjson::SUCCESS) t.content = s;
    simdjson::dom::array calls;
    if (msg["tool_calls"].get(calls) == simdjson::SUCCESS && calls.size() > 0) {
        simdjson::dom::element c = calls.at(0);
        t.has_call = true;
        t.call_id = std::string_view(c["id"]);
        t.call_name = std::string_view(c["function"]["name"]);
        t.call_arguments = std::string_view(c["function"]["arguments"]);
    }
    return t;
}

// Folds an SSE body of chat.completion.chunk events.
inline Turn parse_stream(simdjson::dom::parser& p, const std::string& body) {
    Turn t;
    std::size_t pos = 0;
    while (pos < body.size()) {
        std::size_t nl = body.find('\n', pos);
        if (nl == std::string::npos) nl = body.size();
        std::string_view line(body.data() + pos, nl - pos);
        pos = nl + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.rfind("data:", 0) != 0) continue;
        line.remove_prefix(5);
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (line == "[DONE]") continue;
        simdjson::dom::element chunk = p.parse(line.data(), line.size());
        simdjson::dom::array choices;
        if (chunk["choices"].get(choices) != simdjson::SUCCESS || choices.size() == 0) continue;
        simdjson::dom::element delta = choices.at(0)["delta"];
        std::string_view s;
        if (delta["content"].get(s) == simdjson::SUCCESS) t.content += s;
        simdjson::dom::array calls;
        if (delta["tool_calls"].get(calls) == simdjson::SUCCESS) {
            for (simdjson::dom::element c : calls) {
                t.has_call = true;
                if (c["id"].get(s) == simdjson::SUCCESS) t.call_id += s;
                simdjson::dom::element fn;
                if (c["function"].get(fn) == simdjson::SUCCESS) {
                    if (fn["name"].get(s) == simdjson::SUCCESS) t.call_name += s;
                    if (fn["arguments"].get(s) == simdjson::SUCCESS) t.call_arguments += s;
                }
            }
        }
    }
    return t;
}

struct Job {
    long slot;     // index into the outcome arrays
    long session;  // workload index (user text, expected answer)
    int step;  // 0: first request, 1: after the tool ran
    Turn first;
    std::string tool_output;
};

}  // namespace raw_detail

struct RawOptions {
    std::string base_url;  // http://host:port/v1
    long sessions = 1;
    bool stream = false;
    int threads = 1;
    std::size_t connections = 4096;
};

// Per-session outcome, filled by the client.
struct RawOutcome {
    std::vector<double> end_s;     // completion time per session (steady clock seconds)
    std::vector<char> ok;          // answer verified
    std::atomic<long> errors{0};
    std::atomic<long> done{0};
    std::string first_error;
    std::atomic<bool> first_error_set{false};
};

class RawClient {
public:
    explicit RawClient(RawOptions o) : o_(std::move(o)) {
        auto hp = parse_host_port(o_.base_url);
        host_ = hp.host + ":" + hp.port;
        target_ = o_.base_url.substr(o_.base_url.find('/', 7)) + "/chat/completions";
        boost::asio::io_context io;
        boost::asio::ip::tcp::resolver r(io);
        endpoint_ = *r.resolve(hp.host, hp.port).begin();
    }

    // Runs `n` sessions: slot k is workload session k, or session `fixed` for every
    // slot when fixed >= 0 (the warm-up). Returns when all have finished.
    void run(RawOutcome& out, long n, long fixed = -1) {
        out.end_s.assign(static_cast<std::size_t>(n), 0.0);
        out.ok.assign(static_cast<std::size_t>(n), 0);
        const int shards = static_cast<int>(std::max<long>(1, std::min<long>(o_.threads, n)));
        std::vector<std::unique_ptr<Shard>> sh;
        for (int s = 0; s < shards; ++s) sh.push_back(std::make_unique<Shard>());
        for (long k = 0; k < n; ++k)
            sh[static_cast<std::size_t>(k % shards)]->queue.push_back(
                raw_detail::Job{k, fixed >= 0 ? fixed : k, 0, {}, {}});
        std::vector<std::thread> threads;
        for (int s = 0; s < shards; ++s) {
            Shard& shard = *sh[static_cast<std::size_t>(s)];
            shard.remaining = static_cast<long>(shard.queue.size());
            std::size_t conns = std::max<std::size_t>(1, o_.connections / static_cast<std::size_t>(shards));
            conns = std::min<std::size_t>(conns, shard.queue.size());
            for (std::size_t c = 0; c < conns; ++c)
                boost::asio::co_spawn(shard.io, worker(shard, out), boost::asio::detached);
            threads.emplace_back([&shard] { shard.io.run(); });
        }
        for (auto& t : threads) t.join();
    }

private:
    struct Shard {
        boost::asio::io_context io{1};
        std::deque<raw_detail::Job> queue;
        std::vector<boost::asio::steady_timer*> idle;
        long remaining = 0;
    };

    static void wake_one(Shard& sh) {
        if (sh.idle.empty()) return;
        sh.idle.back()->cancel();
        sh.idle.pop_back();
    }

    std::string body_for(const raw_detail::Job& job) const {
        using raw_detail::append_json_string;
        std::string b;
        b.reserve(1024);
        b += R"({"model":"fake-model","messages":[{"role":"system","content":)";
        append_json_string(b, instructions);
        b += R"(},{"role":"user","content":)";
        append_json_string(b, user_text(job.session));
        b += '}';
        if (job.step == 1) {
            b += R"(,{"role":"assistant","content":null,"tool_calls":[{"id":)";
            append_json_string(b, job.first.call_id);
            b += R"(,"type":"function","function":{"name":)";
            append_json_string(b, job.first.call_name);
            b += R"(,"arguments":)";
            append_json_string(b, job.first.call_arguments);
            b += R"(}}]},{"role":"tool","tool_call_id":)";
            append_json_string(b, job.first.call_id);
            b += R"(,"content":)";
            append_json_string(b, job.tool_output);
            b += '}';
        }
        b += R"(],"tools":[{"type":"function","function":{"name":"word_count","description":)";
        append_json_string(b, tool_description);
        b += R"(,"parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],)"
             R"("additionalProperties":false}}}])";
        if (o_.stream) b += R"(,"stream":true,"stream_options":{"include_usage":true})";
        b += '}';
        return b;
    }

    boost::asio::awaitable<void> worker(Shard& sh, RawOutcome& out) {
        namespace asio = boost::asio;
        namespace beast = boost::beast;
        namespace http = beast::http;
        auto ex = co_await asio::this_coro::executor;
        beast::tcp_stream stream(ex);
        bool connected = false;
        beast::flat_buffer buf;
        asio::steady_timer wake(ex);
        simdjson::dom::parser parser;
        const auto token = asio::as_tuple(asio::use_awaitable);
        for (;;) {
            while (sh.queue.empty()) {
                if (sh.remaining == 0) co_return;
                wake.expires_at(asio::steady_timer::time_point::max());
                sh.idle.push_back(&wake);
                co_await wake.async_wait(token);
            }
            raw_detail::Job job = std::move(sh.queue.front());
            sh.queue.pop_front();
            std::string error;
            bool finished = false;
            try {
                if (!connected) {
                    auto [ec] = co_await stream.async_connect(endpoint_, token);
                    if (ec) throw std::runtime_error("connect: " + ec.message());
                    stream.socket().set_option(asio::ip::tcp::no_delay(true));
                    connected = true;
                }
                http::request<http::string_body> req(http::verb::post, target_, 11);
                req.set(http::field::host, host_);
                req.set(http::field::content_type, "application/json");
                req.set(http::field::authorization, "Bearer sk-fake-local");
                req.body() = body_for(job);
                req.prepare_payload();
                auto [wec, wn] = co_await http::async_write(stream, req, token);
                http::response<http::string_body> res;
                boost::system::error_code rec;
                if (!wec) {
                    auto [ec2, rn] = co_await http::async_read(stream, buf, res, token);
                    rec = ec2;
                }
                if (wec || rec) {
                    connected = false;
                    beast::error_code ignore;
                    stream.socket().close(ignore);
                    throw std::runtime_error("http: " + (wec ? wec : rec).message());
                }
                if (!res.keep_alive()) {
                    connected = false;
                    beast::error_code ignore;
                    stream.socket().close(ignore);
                }
                if (res.result_int() != 200)
                    throw std::runtime_error("HTTP " + std::to_string(res.result_int()) + ": " + res.body());
                raw_detail::Turn turn =
                    o_.stream ? raw_detail::parse_stream(parser, res.body()) : raw_detail::parse_message(parser, res.body());
                if (job.step == 0) {
                    if (!turn.has_call || turn.call_name != "word_count")
                        throw std::runtime_error("expected a word_count call, got '" + turn.content + "'");
                    simdjson::dom::element args = parser.parse(turn.call_arguments);
                    std::string_view text = args["text"];
                    raw_detail::Job next{job.slot, job.session, 1, std::move(turn), std::to_string(word_count(text))};
                    sh.queue.push_back(std::move(next));
                    wake_one(sh);
                } else {
                    finished = true;
                    if (turn.content == expected_final(job.session)) {
                        out.ok[static_cast<std::size_t>(job.slot)] = 1;
                    } else {
                        error = "wrong answer '" + turn.content + "'";
                    }
                }
            } catch (const std::exception& e) {
                error = e.what();
                finished = true;
            }
            if (!finished) continue;
            out.end_s[static_cast<std::size_t>(job.slot)] = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
            if (!error.empty()) {
                if (!out.first_error_set.exchange(true)) out.first_error = error;
                out.errors.fetch_add(1, std::memory_order_relaxed);
            }
            out.done.fetch_add(1, std::memory_order_relaxed);
            if (--sh.remaining == 0)
                while (!sh.idle.empty()) wake_one(sh);
        }
    }

    RawOptions o_;
    std::string host_;
    std::string target_;
    boost::asio::ip::tcp::endpoint endpoint_;
};

}  // namespace rath::bench::fanout
