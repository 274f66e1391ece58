#include <rath/llm/error.hpp>
#include <rath/llm/recording.hpp>

#include "lib/llm/openai/wire.hpp"
#include "lib/text/json_parse.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace rath::llm {

namespace json = boost::json;

struct RecordingChatClient::Counter {
    std::atomic<std::size_t> next{0};
};

RecordingChatClient::RecordingChatClient(std::shared_ptr<ChatClient> inner, Sink sink)
    : ChatClient(inner ? &inner->runtime() : nullptr),
      inner_(std::move(inner)),
      sink_(std::move(sink)),
      counter_(std::make_shared<Counter>()) {
    if (!inner_) throw std::invalid_argument("RecordingChatClient: null inner client");
}

boost::asio::awaitable<void> RecordingChatClient::do_complete(const ChatRequest& request, ChatResponse& out,
                                                              const DeltaCallback* on_delta) {
    RecordedCall call;
    call.provider_kind = std::string(inner_->kind());
    call.model = request.model ? *request.model : inner_->provider().model.value_or(std::string());
    // Encoded before the call: the request is the caller's until the call completes.
    call.request = request_to_json(request, call.model);
    call.streamed = on_delta != nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    co_await inner_->async_complete(request, out, on_delta);
    call.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    call.response = response_to_json(out);
    if (out.raw && !out.raw.text().empty()) call.raw = out.raw.text();
    call.index = counter_->next.fetch_add(1);
    if (sink_) sink_(std::move(call));
}

json::object request_to_json(const ChatRequest& request, const std::string& model) {
    const std::string body = openai::build_chat_body(request, model, false).text();
    auto v = rath::detail::parse_json(body);
    if (!v || !v->is_object()) throw std::logic_error("the OpenAI request encoding produced no JSON object");
    return std::move(v->get_object());
}

json::object sampling_to_json(const Provider& provider) {
    ChatRequest req;
    provider.apply_to(req);
    json::object body = request_to_json(req, provider.model.value_or(std::string()));
    body.erase("model");
    body.erase("messages");
    body.erase("tools");
    return body;
}

namespace {

json::value opt_string(const std::optional<std::string>& s) { return s ? json::value(*s) : json::value(nullptr); }

json::object message_to_json(const AssistantMessage& m) {
    json::object o;
    o["role"] = "assistant";
    o["content"] = opt_string(m.content);
    if (m.refusal) o["refusal"] = *m.refusal;
    if (m.reasoning_content) o["reasoning_content"] = *m.reasoning_content;
    if (m.tool_calls) {
        json::array calls;
        for (const auto& c : *m.tool_calls)
            calls.push_back(json::object{{"id", c.id},
                                         {"type", c.type},
                                         {"function", json::object{{"name", c.function.name},
                                                                   {"arguments", c.function.arguments}}}});
        o["tool_calls"] = std::move(calls);
    }
    if (m.function_call) o["function_call"] = *m.function_call;
    if (m.annotations) {
        json::array a;
        for (const auto& x : *m.annotations) a.push_back(x);
        o["annotations"] = std::move(a);
    }
    return o;
}

}  // namespace

json::object response_to_json(const ChatResponse& r) {
    json::object o;
    o["id"] = r.id;
    o["object"] = "chat.completion";
    o["created"] = r.created;
    o["model"] = r.model;
    json::array choices;
    for (const auto& c : r.choices) {
        json::object ch;
        ch["index"] = c.index;
        ch["finish_reason"] = std::string(to_string(c.finish_reason));
        ch["message"] = message_to_json(c.message);
        ch["logprobs"] = c.logprobs ? json::value(*c.logprobs) : json::value(nullptr);
        choices.push_back(std::move(ch));
    }
    o["choices"] = std::move(choices);
    if (r.usage) {
        json::object u;
        u["prompt_tokens"] = r.usage->prompt_tokens;
        u["completion_tokens"] = r.usage->completion_tokens;
        u["total_tokens"] = r.usage->total_tokens;
        if (r.usage->completion_tokens_details) u["completion_tokens_details"] = *r.usage->completion_tokens_details;
        if (r.usage->prompt_tokens_details) u["prompt_tokens_details"] = *r.usage->prompt_tokens_details;
        o["usage"] = std::move(u);
    }
    if (r.service_tier) o["service_tier"] = *r.service_tier;
    if (r.system_fingerprint) o["system_fingerprint"] = *r.system_fingerprint;
    return o;
}

ChatResponse response_from_json(const json::object& o) {
    return openai::parse_chat_response_owned(json::serialize(o), "replay");
}

// ---- the file format ----

json::object config_to_json(const RecordingConfig& c) {
    json::object o;
    o["record_type"] = "config";
    o["session_id"] = c.session_id;
    o["provider_kind"] = c.provider_kind;
    o["model"] = c.model;
    o["sampling"] = c.sampling;
    o["agent_rows"] = c.agent_rows;
    o["seed_rows"] = c.seed_rows;
    json::array tools;
    for (const auto& t : c.tools) {
        json::object x;
        x["name"] = t.name;
        x["description"] = opt_string(t.description);
        x["parameters"] = t.parameters;
        x["strict"] = t.strict ? json::value(*t.strict) : json::value(nullptr);
        tools.push_back(std::move(x));
    }
    o["tools"] = std::move(tools);
    json::array user;
    for (const auto& n : c.user_tools) user.emplace_back(n);
    o["user_tools"] = std::move(user);
    o["max_tool_rounds"] = c.max_tool_rounds;
    o["sandbox_prepared"] = c.sandbox_prepared;
    return o;
}

json::object call_to_json(const RecordedCall& c) {
    json::object o;
    o["record_type"] = "llm_call";
    o["index"] = c.index;
    o["provider_kind"] = c.provider_kind;
    o["model"] = c.model;
    o["request"] = c.request;
    o["response"] = c.response;
    o["raw"] = opt_string(c.raw);
    o["streamed"] = c.streamed;
    o["duration_ms"] = c.duration_ms;
    return o;
}

namespace {

// Field access with the error naming the line and the key.
struct Fields {
    const json::object& o;
    std::string where;  // "<source>:<line>"

    [[noreturn]] void fail(const std::string& msg) const { throw RecordingFormatError(where + ": " + msg); }
    const json::value& need(std::string_view key) const {
        auto it = o.find(key);
        if (it == o.end()) fail("missing field '" + std::string(key) + "'");
        return it->value();
    }
    std::string string(std::string_view key) const {
        const auto& v = need(key);
        if (!v.is_string()) fail("field '" + std::string(key) + "' must be a string");
        return std::string(v.get_string());
    }
    std::optional<std::string> opt_string(std::string_view key) const {
        auto it = o.find(key);
        if (it == o.end() || it->value().is_null()) return std::nullopt;
        if (!it->value().is_string()) fail("field '" + std::string(key) + "' must be a string or null");
        return std::string(it->value().get_string());
    }
    const json::object& object(std::string_view key) const {
        const auto& v = need(key);
        if (!v.is_object()) fail("field '" + std::string(key) + "' must be an object");
        return v.get_object();
    }
    const json::array& array(std::string_view key) const {
        const auto& v = need(key);
        if (!v.is_array()) fail("field '" + std::string(key) + "' must be an array");
        return v.get_array();
    }
    std::int64_t integer(std::string_view key) const {
        const auto& v = need(key);
        if (v.is_int64()) return v.get_int64();
        if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
            return static_cast<std::int64_t>(v.get_uint64());
        fail("field '" + std::string(key) + "' must be an integer");
    }
    std::size_t count(std::string_view key) const {
        auto n = integer(key);
        if (n < 0) fail("field '" + std::string(key) + "' must not be negative");
        return static_cast<std::size_t>(n);
    }
};

RecordingConfig decode_config(const Fields& f) {
    RecordingConfig c;
    c.session_id = f.string("session_id");
    c.provider_kind = f.string("provider_kind");
    c.model = f.string("model");
    c.sampling = f.object("sampling");
    c.agent_rows = f.array("agent_rows");
    for (const auto& r : c.agent_rows)
        if (!r.is_object() || !r.get_object().contains("kind") || !r.get_object().contains("payload"))
            f.fail("every agent row must be an object with 'kind' and 'payload'");
    c.seed_rows = f.count("seed_rows");
    for (const auto& t : f.array("tools")) {
        if (!t.is_object()) f.fail("every tool must be an object");
        Fields tf{t.get_object(), f.where};
        FunctionTool ft;
        ft.name = tf.string("name");
        ft.description = tf.opt_string("description");
        ft.parameters = tf.object("parameters");
        if (auto it = t.get_object().find("strict"); it != t.get_object().end() && !it->value().is_null()) {
            if (!it->value().is_bool()) f.fail("a tool's 'strict' must be a boolean or null");
            ft.strict = it->value().get_bool();
        }
        c.tools.push_back(std::move(ft));
    }
    for (const auto& n : f.array("user_tools")) {
        if (!n.is_string()) f.fail("'user_tools' must list strings");
        c.user_tools.emplace_back(n.get_string());
    }
    c.max_tool_rounds = static_cast<int>(f.integer("max_tool_rounds"));
    if (auto it = f.o.find("sandbox_prepared"); it != f.o.end()) {  // absent in older recordings
        if (!it->value().is_bool()) f.fail("field 'sandbox_prepared' must be a boolean");
        c.sandbox_prepared = it->value().get_bool();
    }
    return c;
}

RecordedCall decode_call(const Fields& f) {
    RecordedCall c;
    c.index = f.count("index");
    c.provider_kind = f.string("provider_kind");
    c.model = f.string("model");
    c.request = f.object("request");
    c.response = f.object("response");
    c.raw = f.opt_string("raw");
    if (auto it = f.o.find("streamed"); it != f.o.end()) {
        if (!it->value().is_bool()) f.fail("field 'streamed' must be a boolean");
        c.streamed = it->value().get_bool();
    }
    if (auto it = f.o.find("duration_ms"); it != f.o.end()) {
        if (!it->value().is_number()) f.fail("field 'duration_ms' must be a number");
        c.duration_ms = it->value().to_number<double>();
    }
    return c;
}

}  // namespace

Recording parse_recording(std::string_view text, std::string_view source) {
    Recording rec;
    bool have_config = false;
    std::size_t lineno = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++lineno;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        const std::string where = std::string(source) + ":" + std::to_string(lineno);
        rath::detail::JsonParseError pe;
        auto v = rath::detail::parse_json(line, &pe);
        if (!v)
            throw RecordingFormatError(where + ": invalid JSON (col " + std::to_string(pe.column) + "): " + pe.message);
        if (!v->is_object()) throw RecordingFormatError(where + ": a record must be a JSON object");
        Fields f{v->get_object(), where};
        const std::string type = f.string("record_type");
        if (type == "config") {
            if (have_config) f.fail("a second config record");
            if (!rec.calls.empty()) f.fail("the config record must come first");
            rec.config = decode_config(f);
            have_config = true;
        } else if (type == "llm_call") {
            if (!have_config) f.fail("an llm_call record before the config record");
            RecordedCall c = decode_call(f);
            if (c.index != rec.calls.size())
                f.fail("call index " + std::to_string(c.index) + " where " + std::to_string(rec.calls.size()) +
                       " was expected");
            rec.calls.push_back(std::move(c));
        } else {
            f.fail("unknown record_type '" + type + "'");
        }
    }
    if (!have_config) throw RecordingFormatError(std::string(source) + ": no config record (an empty recording)");
    return rec;
}

}  // namespace rath::llm
