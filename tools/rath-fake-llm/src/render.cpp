#include "tools/rath-fake-llm/src/render.hpp"

#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/text.hpp"
#include "tools/rath-fake-llm/src/workload.hpp"

#include <simdjson.h>

#include <algorithm>

namespace rath::fake_llm::detail {

namespace {

constexpr std::string_view json_type = "application/json";
constexpr std::string_view sse_type = "text/event-stream; charset=utf-8";

void pieces_of(const Turn& turn, std::string_view s, std::vector<std::string_view>& out) {
    if (turn.chunks)
        split_pieces(s, turn.chunks, out);
    else
        split_words(s, out);
}

struct Usage {
    std::uint64_t prompt, completion;
};

Usage usage_of(const ChatRequest& req, const Turn& turn) {
    return {turn.prompt_tokens.value_or(req.prompt_tokens), turn.completion_tokens.value_or(default_completion_tokens(turn))};
}

std::string_view stop_reason(std::string_view finish) {
    if (finish == "tool_calls") return "tool_use";
    if (finish == "length") return "max_tokens";
    if (finish == "content_filter") return "refusal";
    return "end_turn";
}

void append_usage_openai(std::string& b, Usage u) {
    b += "{\"prompt_tokens\":";
    append_uint(b, u.prompt);
    b += ",\"completion_tokens\":";
    append_uint(b, u.completion);
    b += ",\"total_tokens\":";
    append_uint(b, u.prompt + u.completion);
    b += '}';
}

// ---- OpenAI Chat Completions ----

void openai_json(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& r) {
    auto& b = r.body;
    b += "{\"id\":\"chatcmpl-fake-";
    append_uint(b, ctx.id_number);
    b += "\",\"object\":\"chat.completion\",\"created\":";
    append_uint(b, ctx.created);
    b += ",\"model\":";
    append_json_string(b, ctx.model);
    b += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":";
    append_json_string_or_null(b, turn.text, !turn.has_text);
    b += ",\"refusal\":null";
    if (turn.call_count) {
        b += ",\"tool_calls\":[";
        for (std::size_t i = 0; i < turn.call_count; ++i) {
            const auto& c = turn.calls[i];
            if (i) b += ',';
            b += "{\"id\":";
            append_json_string(b, c.id);
            b += ",\"type\":\"function\",\"function\":{\"name\":";
            append_json_string(b, c.name);
            b += ",\"arguments\":";
            append_json_string(b, c.arguments);
            b += "}}";
        }
        b += ']';
    }
    b += "},\"logprobs\":null,\"finish_reason\":";
    append_json_string(b, turn.finish);
    b += "}],\"usage\":";
    append_usage_openai(b, usage_of(req, turn));
    b += ",\"system_fingerprint\":null}";
}

class OpenAIStream {
public:
    OpenAIStream(const ChatRequest& req, const RenderContext& ctx, Reply& r) : req_(req), r_(r) {
        prefix_ = "data: {\"id\":\"chatcmpl-fake-";
        append_uint(prefix_, ctx.id_number);
        prefix_ += "\",\"object\":\"chat.completion.chunk\",\"created\":";
        append_uint(prefix_, ctx.created);
        prefix_ += ",\"model\":";
        append_json_string(prefix_, ctx.model);
        prefix_ += ",\"system_fingerprint\":null,\"choices\":";
    }
    // Opens a chunk whose delta is written next by the caller.
    std::string& open() {
        r_.body += prefix_;
        r_.body += "[{\"index\":0,\"delta\":";
        return r_.body;
    }
    void close(std::string_view finish = {}) {
        auto& b = r_.body;
        b += ",\"logprobs\":null,\"finish_reason\":";
        if (finish.empty())
            b += "null";
        else
            append_json_string(b, finish);
        b += "}]";
        if (req_.include_usage) b += ",\"usage\":null";
        b += "}\n\n";
        r_.event_ends.push_back(b.size());
    }
    void usage(Usage u) {
        auto& b = r_.body;
        b += prefix_;
        b += "[],\"usage\":";
        append_usage_openai(b, u);
        b += "}\n\n";
        r_.event_ends.push_back(b.size());
    }
    void done() {
        r_.body += "data: [DONE]\n\n";
        r_.event_ends.push_back(r_.body.size());
    }

private:
    const ChatRequest& req_;
    Reply& r_;
    std::string prefix_;
};

void openai_sse(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& r) {
    OpenAIStream s(req, ctx, r);
    auto& pieces = *ctx.pieces;
    bool role_sent = false;
    if (turn.has_text || turn.call_count == 0) {
        s.open() += "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}";
        s.close();
        role_sent = true;
        pieces_of(turn, turn.text, pieces);
        for (auto p : pieces) {
            if (p.empty() && !turn.text.empty()) continue;
            auto& b = s.open();
            b += "{\"content\":";
            append_json_string(b, p);
            b += '}';
            s.close();
        }
    }
    for (std::size_t i = 0; i < turn.call_count; ++i) {
        const auto& c = turn.calls[i];
        auto& b = s.open();
        b += role_sent ? "{" : "{\"role\":\"assistant\",\"content\":null,";
        b += "\"tool_calls\":[{\"index\":";
        append_uint(b, i);
        b += ",\"id\":";
        append_json_string(b, c.id);
        b += ",\"type\":\"function\",\"function\":{\"name\":";
        append_json_string(b, c.name);
        b += ",\"arguments\":\"\"}}]";
        b += role_sent ? "}" : ",\"refusal\":null}";
        s.close();
        role_sent = true;
        pieces_of(turn, c.arguments, pieces);
        for (auto p : pieces) {
            auto& d = s.open();
            d += "{\"tool_calls\":[{\"index\":";
            append_uint(d, i);
            d += ",\"function\":{\"arguments\":";
            append_json_string(d, p);
            d += "}}]}";
            s.close();
        }
    }
    s.open() += "{}";
    s.close(turn.finish);
    if (req.include_usage) s.usage(usage_of(req, turn));
    s.done();
}

void openai_stream_error(const Turn& turn, Reply& r) {
    auto& b = r.body;
    b += "data: {\"error\":{\"message\":";
    append_json_string(b, turn.fault_message.empty()
                              ? std::string_view("The server had an error while processing your request. Sorry about that!")
                              : std::string_view(turn.fault_message));
    b += ",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";
    r.event_ends.push_back(b.size());
}

// ---- Anthropic Messages ----

void append_usage_anthropic(std::string& b, std::uint64_t input, std::uint64_t output) {
    b += "{\"input_tokens\":";
    append_uint(b, input);
    b += ",\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":";
    append_uint(b, output);
    b += ",\"service_tier\":\"standard\"}";
}

// A tool_use `input` must be an object: valid object text goes in verbatim, anything
// else (Fault::bad_tool_json) is sent as a string so that the body stays JSON.
void append_tool_input(std::string& b, std::string_view args) {
    thread_local simdjson::dom::parser parser;
    simdjson::padded_string padded(args);
    simdjson::dom::element e;
    if (!parser.parse(padded).get(e) && e.is_object())
        b += args;
    else
        append_json_string(b, args);
}

void anthropic_json(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& r) {
    auto& b = r.body;
    b += "{\"id\":\"msg_fake_";
    append_uint(b, ctx.id_number);
    b += "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
    append_json_string(b, ctx.model);
    b += ",\"content\":[";
    bool first = true;
    if (turn.has_text && (!turn.text.empty() || turn.call_count == 0)) {
        b += "{\"type\":\"text\",\"text\":";
        append_json_string(b, turn.text);
        b += '}';
        first = false;
    }
    for (std::size_t i = 0; i < turn.call_count; ++i) {
        const auto& c = turn.calls[i];
        if (!first) b += ',';
        first = false;
        b += "{\"type\":\"tool_use\",\"id\":";
        append_json_string(b, c.id);
        b += ",\"name\":";
        append_json_string(b, c.name);
        b += ",\"input\":";
        append_tool_input(b, c.arguments);
        b += '}';
    }
    b += "],\"stop_reason\":";
    append_json_string(b, stop_reason(turn.finish));
    b += ",\"stop_sequence\":null,\"usage\":";
    auto u = usage_of(req, turn);
    append_usage_anthropic(b, u.prompt, u.completion);
    b += '}';
}

class AnthropicStream {
public:
    explicit AnthropicStream(Reply& r) : r_(r) {}
    std::string& open(std::string_view event) {
        r_.body += "event: ";
        r_.body += event;
        r_.body += "\ndata: ";
        return r_.body;
    }
    void close() {
        r_.body += "\n\n";
        r_.event_ends.push_back(r_.body.size());
    }
    void block_start_text(std::size_t index) {
        auto& b = open("content_block_start");
        b += "{\"type\":\"content_block_start\",\"index\":";
        append_uint(b, index);
        b += ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}";
        close();
    }
    void delta(std::size_t index, std::string_view type, std::string_view field, std::string_view value) {
        auto& b = open("content_block_delta");
        b += "{\"type\":\"content_block_delta\",\"index\":";
        append_uint(b, index);
        b += ",\"delta\":{\"type\":\"";
        b += type;
        b += "\",\"";
        b += field;
        b += "\":";
        append_json_string(b, value);
        b += "}}";
        close();
    }
    void block_stop(std::size_t index) {
        auto& b = open("content_block_stop");
        b += "{\"type\":\"content_block_stop\",\"index\":";
        append_uint(b, index);
        b += '}';
        close();
    }
    void ping() {
        open("ping") += "{\"type\": \"ping\"}";
        close();
    }

private:
    Reply& r_;
};

void anthropic_sse(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& r) {
    AnthropicStream s(r);
    auto u = usage_of(req, turn);
    auto& pieces = *ctx.pieces;
    {
        auto& b = s.open("message_start");
        b += "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake_";
        append_uint(b, ctx.id_number);
        b += "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
        append_json_string(b, ctx.model);
        b += ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":";
        append_usage_anthropic(b, u.prompt, 1);
        b += "}}";
        s.close();
    }
    std::size_t index = 0;
    bool pinged = false;
    if (turn.has_text && (!turn.text.empty() || turn.call_count == 0)) {
        s.block_start_text(index);
        s.ping();
        pinged = true;
        pieces_of(turn, turn.text, pieces);
        for (auto p : pieces)
            if (!p.empty()) s.delta(index, "text_delta", "text", p);
        s.block_stop(index);
        ++index;
    }
    for (std::size_t i = 0; i < turn.call_count; ++i, ++index) {
        const auto& c = turn.calls[i];
        auto& b = s.open("content_block_start");
        b += "{\"type\":\"content_block_start\",\"index\":";
        append_uint(b, index);
        b += ",\"content_block\":{\"type\":\"tool_use\",\"id\":";
        append_json_string(b, c.id);
        b += ",\"name\":";
        append_json_string(b, c.name);
        b += ",\"input\":{}}}";
        s.close();
        if (!pinged) {
            s.ping();
            pinged = true;
        }
        s.delta(index, "input_json_delta", "partial_json", "");
        pieces_of(turn, c.arguments, pieces);
        for (auto p : pieces)
            if (!p.empty()) s.delta(index, "input_json_delta", "partial_json", p);
        s.block_stop(index);
    }
    {
        auto& b = s.open("message_delta");
        b += "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":";
        append_json_string(b, stop_reason(turn.finish));
        b += ",\"stop_sequence\":null},\"usage\":{\"output_tokens\":";
        append_uint(b, u.completion);
        b += "}}";
        s.close();
    }
    s.open("message_stop") += "{\"type\":\"message_stop\"}";
    s.close();
}

void anthropic_stream_error(const Turn& turn, Reply& r) {
    auto& b = r.body;
    b += "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":";
    append_json_string(b, turn.fault_message.empty() ? std::string_view("Overloaded") : std::string_view(turn.fault_message));
    b += "}}\n\n";
    r.event_ends.push_back(b.size());
}

// Keeps the first half of the events (at least one): where a cut stream stops.
std::size_t half_of_events(const Reply& r) { return std::max<std::size_t>(1, r.event_ends.size() / 2); }

}  // namespace

std::string_view reason_phrase(unsigned status) {
    switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 413: return "Payload Too Large";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 529: return "Site Overloaded";
        default: return "Unknown";
    }
}

void append_head(std::string& out, const Reply& r, bool keep_alive) {
    out += "HTTP/1.1 ";
    append_uint(out, r.status);
    out += ' ';
    out += reason_phrase(r.status);
    out += "\r\ncontent-type: ";
    out += r.content_type;
    if (r.sse) {
        out += "\r\ncache-control: no-cache\r\ntransfer-encoding: chunked";
    } else {
        out += "\r\ncontent-length: ";
        append_uint(out, r.body.size());
    }
    out += keep_alive && !r.close ? "\r\n" : "\r\nconnection: close\r\n";
    out += r.extra_headers;
    out += "\r\n";
}

void render_error(Api api, unsigned status, std::string_view type, std::string_view message, Reply& r, std::string_view code) {
    r.status = status;
    r.content_type = json_type;
    r.sse = false;
    r.body.clear();
    r.event_ends.clear();
    auto& b = r.body;
    if (api == Api::anthropic) {
        b += "{\"type\":\"error\",\"error\":{\"type\":";
        append_json_string(b, type);
        b += ",\"message\":";
        append_json_string(b, message);
        b += "}}";
    } else {
        b += "{\"error\":{\"message\":";
        append_json_string(b, message);
        b += ",\"type\":";
        append_json_string(b, type);
        b += ",\"param\":null,\"code\":";
        append_json_string_or_null(b, code, code.empty());
        b += "}}";
    }
}

void render_chat(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& r) {
    r.llm = true;
    r.kind = turn.call_count ? Reply::Kind::tool_call : Reply::Kind::final_text;
    r.fault = turn.fault != Fault::none;
    const bool anthropic = req.api == Api::anthropic;
    auto message = [&](std::string_view fallback) {
        return turn.fault_message.empty() ? fallback : std::string_view(turn.fault_message);
    };
    switch (turn.fault) {
        case Fault::rate_limit:
            r.extra_headers += "retry-after: ";
            append_uint(r.extra_headers, turn.retry_after);
            r.extra_headers += "\r\n";
            if (anthropic)
                render_error(req.api, 429, "rate_limit_error",
                             message("This request would exceed the rate limit for your organization. Please try again later."), r);
            else
                render_error(req.api, 429, "requests",
                             message("Rate limit reached for requests. Please try again later."), r, "rate_limit_exceeded");
            return;
        case Fault::server_error:
            render_error(req.api, 500, anthropic ? "api_error" : "server_error",
                         message(anthropic ? "Internal server error"
                                           : "The server had an error while processing your request. Sorry about that!"),
                         r);
            return;
        case Fault::overloaded:
            render_error(req.api, 529, "overloaded_error", message("Overloaded"), r);
            return;
        case Fault::stream_error:
            if (!req.stream) {  // nothing to interrupt: the error comes as a 500
                render_error(req.api, 500, anthropic ? "api_error" : "server_error",
                             message(anthropic ? "Internal server error"
                                               : "The server had an error while processing your request. Sorry about that!"),
                             r);
                return;
            }
            break;
        default:
            break;
    }
    r.status = 200;
    if (req.stream) {
        r.sse = true;
        r.content_type = sse_type;
        if (anthropic)
            anthropic_sse(req, turn, ctx, r);
        else
            openai_sse(req, turn, ctx, r);
    } else {
        r.content_type = json_type;
        if (anthropic)
            anthropic_json(req, turn, ctx, r);
        else
            openai_json(req, turn, ctx, r);
    }
    switch (turn.fault) {
        case Fault::truncate:
            if (r.sse) {
                std::size_t keep = half_of_events(r);
                r.body.resize(r.event_ends[keep - 1]);
                r.event_ends.resize(keep);
            } else {
                r.body.resize(r.body.size() / 2);
            }
            break;
        case Fault::reset:
            r.reset = true;
            r.close = true;
            r.reset_after = r.sse ? r.event_ends[half_of_events(r) - 1] : r.body.size() / 2;
            break;
        case Fault::stream_error: {
            std::size_t keep = half_of_events(r);
            r.body.resize(r.event_ends[keep - 1]);
            r.event_ends.resize(keep);
            if (anthropic)
                anthropic_stream_error(turn, r);
            else
                openai_stream_error(turn, r);
            break;
        }
        default:
            break;
    }
}

}  // namespace rath::fake_llm::detail
