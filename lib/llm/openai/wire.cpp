#include "lib/llm/openai/wire.hpp"

#include "lib/llm/json_util.hpp"
#include "lib/text/json_string.hpp"
#include "lib/text/json_write.hpp"

#include <rath/llm/error.hpp>
#include <rath/net/peer_bytes.hpp>

#include <boost/json.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <type_traits>

namespace rath::llm::openai {

namespace json = boost::json;
namespace dom = simdjson::dom;
using namespace rath::llm::detail;
using rath::detail::append_json_string;

void strip_additional_properties(json::value& v) {
    if (auto* o = v.if_object()) {
        o->erase("additionalProperties");
        for (auto& kv : *o) strip_additional_properties(kv.value());
    } else if (auto* a = v.if_array()) {
        for (auto& x : *a) strip_additional_properties(x);
    }
}

namespace {

double finite(const char* name, double v) {
    if (!std::isfinite(v)) throw ProviderConfigError(std::string(name) + " must be a finite number");
    return v;
}


}  // namespace

namespace {

json::array build_tools(const std::vector<FunctionTool>& list) {
    json::array tools;
    for (const auto& t : list) {
        json::object fn;
        fn["name"] = t.name;
        json::value params = t.parameters;
        strip_additional_properties(params);
        fn["parameters"] = std::move(params);
        if (t.description) fn["description"] = *t.description;
        if (t.strict) fn["strict"] = *t.strict;
        tools.emplace_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
    }
    return tools;
}

// Every named tail field that is set, in body order, as visit(key, value); value is a
// JSON value or object, a bool, an int64, a finite double, a string or the stop list.
template <class Visit>
void visit_tail_fields(const ChatRequest& r, Visit&& visit) {
    if (r.sampling.tool_choice) visit("tool_choice", *r.sampling.tool_choice);
    if (r.sampling.parallel_tool_calls) visit("parallel_tool_calls", *r.sampling.parallel_tool_calls);
    if (r.sampling.response_format) visit("response_format", *r.sampling.response_format);
    if (r.sampling.temperature) visit("temperature", finite("temperature", *r.sampling.temperature));
    if (r.sampling.top_p) visit("top_p", finite("top_p", *r.sampling.top_p));
    if (r.sampling.max_completion_tokens) visit("max_completion_tokens", *r.sampling.max_completion_tokens);
    if (r.sampling.max_tokens) visit("max_tokens", *r.sampling.max_tokens);
    if (r.sampling.stop) visit("stop", *r.sampling.stop);
    if (r.sampling.n) visit("n", *r.sampling.n);
    if (r.sampling.seed) visit("seed", *r.sampling.seed);
    if (r.sampling.frequency_penalty) visit("frequency_penalty", finite("frequency_penalty", *r.sampling.frequency_penalty));
    if (r.sampling.presence_penalty) visit("presence_penalty", finite("presence_penalty", *r.sampling.presence_penalty));
    if (r.sampling.logit_bias) visit("logit_bias", *r.sampling.logit_bias);
    if (r.sampling.logprobs) visit("logprobs", *r.sampling.logprobs);
    if (r.sampling.top_logprobs) visit("top_logprobs", *r.sampling.top_logprobs);
    if (r.sampling.reasoning_effort) visit("reasoning_effort", *r.sampling.reasoning_effort);
    if (r.sampling.verbosity) visit("verbosity", *r.sampling.verbosity);
    if (r.sampling.metadata) visit("metadata", *r.sampling.metadata);
    if (r.sampling.user) visit("user", *r.sampling.user);
    if (r.sampling.store) visit("store", *r.sampling.store);
    if (r.sampling.service_tier) visit("service_tier", *r.sampling.service_tier);
}

template <class T>
void append_field_value(std::string& out, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
        out += value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        char buf[24];
        out.append(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
    } else if constexpr (std::is_same_v<T, double>) {
        rath::detail::append_json_value(out, json::value(value));  // Boost.JSON's shortest form
    } else if constexpr (std::is_same_v<T, std::string>) {
        append_json_string(out, value);
    } else if constexpr (std::is_same_v<T, StopSequences>) {
        if (auto* one = std::get_if<std::string>(&value)) {
            append_json_string(out, *one);
        } else {
            out += '[';
            bool first = true;
            for (const auto& x : std::get<std::vector<std::string>>(value)) {
                if (!first) out += ',';
                first = false;
                append_json_string(out, x);
            }
            out += ']';
        }
    } else {
        rath::detail::append_json_value(out, value);  // json::value or json::object
    }
}

void append_key(std::string& out, std::string_view key) {
    out += ",\"";
    out += key;
    out += "\":";
}

// What the extra create args add to a body: every key of extra_create_args (without
// "stream" and the transport keys), then those of extra_body; a later one replaces an
// earlier one's value in place. A key the body already has is written at that key's
// place; the others after the named fields, in this order (a JSON object's merge).
struct Overrides {
    std::vector<std::pair<std::string_view, const json::value*>> fields;
    std::vector<bool> used;
    bool user_stream_options = false;

    const json::value* take(std::string_view key) {
        for (std::size_t i = 0; i < fields.size(); ++i)
            if (fields[i].first == key) {
                used[i] = true;
                return fields[i].second;
            }
        return nullptr;
    }
    void put(std::string_view key, const json::value* v) {
        for (auto& f : fields)
            if (f.first == key) {
                f.second = v;
                return;
            }
        fields.emplace_back(key, v);
        used.push_back(false);
    }
};

// The extras of `r` as overrides; `transport` receives the transport keys. The
// overrides point into `r` and `extra_body`, which must outlive them.
Overrides collect_overrides(const ChatRequest& r, bool stream, TransportExtras& transport) {
    Overrides o;
    if (r.sampling.extra_create_args.empty()) return o;
    json::object extras = r.sampling.extra_create_args;
    if (auto* s = extras.if_contains("stream")) {
        if (!stream && s->is_bool() && s->as_bool())
            throw ProviderConfigError("stream=True is not supported here; use the streaming call instead");
    }
    transport = take_transport_extras(extras);
    for (const auto& kv : r.sampling.extra_create_args) {
        const std::string_view k = kv.key();
        if (k == "stream" || !extras.contains(k)) continue;  // the stream flag and transport keys are not body keys
        o.put(k, &kv.value());
    }
    for (const auto& kv : transport.body) o.put(kv.key(), &kv.value());
    o.user_stream_options = extras.contains("stream_options") || transport.body.contains("stream_options");
    return o;
}

// `"key":` then the override's value when there is one, else write(out).
template <class Write>
void append_field(std::string& out, std::string_view key, Overrides& o, Write&& write) {
    append_key(out, key);
    if (const json::value* v = o.take(key))
        rath::detail::append_json_value(out, *v);
    else
        write(out);
}

// {"model":…,"messages":[…] — the head of every body, most of its bytes.
void write_head(std::string& out, const ChatRequest& r, const std::string& model, Overrides& o) {
    std::size_t size = 32 + model.size();
    for (const auto& m : r.messages)
        size += 64 + m.role.size() + (m.content ? m.content->size() : 0) + (m.name ? m.name->size() : 0) +
                (m.tool_calls ? 256 * m.tool_calls->size() : 0);
    out.reserve(size);
    out += "{\"model\":";
    if (const json::value* v = o.take("model"))
        rath::detail::append_json_value(out, *v);
    else
        append_json_string(out, model);
    append_field(out, "messages", o, [&](std::string& b) {
        b += '[';
        bool first = true;
        for (const auto& m : r.messages) {
            b += first ? "{\"role\":" : ",{\"role\":";
            first = false;
            append_json_string(b, m.role);
            if (m.content) {
                b += ",\"content\":";
                append_json_string(b, *m.content);
            }
            if (m.name) {
                b += ",\"name\":";
                append_json_string(b, *m.name);
            }
            if (m.tool_call_id) {
                b += ",\"tool_call_id\":";
                append_json_string(b, *m.tool_call_id);
            }
            if (m.tool_calls) {
                b += ",\"tool_calls\":[";
                for (std::size_t i = 0; i < m.tool_calls->size(); ++i) {
                    if (i) b += ',';
                    rath::detail::append_json_value(b, (*m.tool_calls)[i]);
                }
                b += ']';
            }
            b += '}';
        }
        b += ']';
    });
}

// Everything after the tools: the named fields, the extras, the stream flags, '}'.
void write_tail(std::string& out, const ChatRequest& r, bool stream, Overrides& o) {
    visit_tail_fields(r, [&](std::string_view key, const auto& value) {
        append_field(out, key, o, [&](std::string& b) { append_field_value(b, value); });
    });
    bool stream_written = false;
    for (std::size_t i = 0; i < o.fields.size(); ++i) {
        if (o.used[i]) continue;
        const auto& [key, value] = o.fields[i];
        append_key(out, key);
        if (key == "stream") {  // extra_body's "stream" keeps its place; its value is the call's
            out += stream ? "true" : "false";
            stream_written = true;
        } else {
            rath::detail::append_json_value(out, *value);
        }
    }
    if (!stream_written) {
        out += ",\"stream\":";
        out += stream ? "true" : "false";
    }
    if (stream && !o.user_stream_options) out += ",\"stream_options\":{\"include_usage\":true}";
    out += '}';
}

// The tool list's OpenAI encoding, made once per list and shared by every request.
std::shared_ptr<const std::string> encoded_tools(const ToolList& tools) {
    return tools.encoded_shared(ToolList::Encoding::openai,
                                [](const std::vector<FunctionTool>& list) { return json::serialize(build_tools(list)); });
}

// A body's tail (tool_choice, stream, sampling settings) is the same for nearly every
// request a program sends, so the few most recent tails of this thread are kept and
// shared: a request then points at one instead of holding its own copy while it waits.
std::shared_ptr<const std::string> shared_tail(const std::string& text) {
    struct Recent {
        std::array<std::shared_ptr<const std::string>, 4> tails;
        std::size_t next = 0;
    };
    thread_local Recent recent;
    for (const auto& t : recent.tails)
        if (t && *t == text) return t;
    auto t = std::make_shared<const std::string>(text);
    recent.tails[recent.next++ % recent.tails.size()] = t;
    return t;
}

}  // namespace

std::string ChatBody::text() const {
    std::string all = head;
    for (const auto& p : parts) all += *p;
    return all;
}

ChatBody build_chat_body(const ChatRequest& r, const std::string& model, bool stream, TransportExtras* transport) {
    TransportExtras t;
    Overrides o = collect_overrides(r, stream, t);
    ChatBody out;
    out.parts.reserve(2);
    write_head(out.head, r, model, o);
    if (r.tools) {
        if (const json::value* v = o.take("tools")) {
            append_key(out.head, "tools");
            rath::detail::append_json_value(out.head, *v);
        } else {
            out.head += ",\"tools\":";
            out.parts.push_back(encoded_tools(*r.tools));  // shared, never copied
        }
    }
    thread_local std::string tail;
    tail.clear();
    write_tail(tail, r, stream, o);
    if (o.fields.empty())
        out.parts.push_back(shared_tail(tail));
    else
        out.parts.push_back(std::make_shared<const std::string>(tail));
    if (transport) *transport = std::move(t);
    return out;
}

namespace {

FinishReason map_finish_nonstream(std::optional<std::string_view> s) {
    if (!s) return FinishReason::stop;
    if (*s == "function_call") return FinishReason::tool_calls;
    return finish_reason_from_string(*s).value_or(FinishReason::stop);
}

// Text parts of an array-valued content (Mistral): {"type":"text"} into text,
// {"type":"thinking"} into reasoning.
void split_content_parts(dom::array parts, std::string& text, std::string& reasoning) {
    for (dom::element p : parts) {
        auto type = string_field(p, "type");
        if (!type) continue;
        if (*type == "text") {
            if (auto t = string_field(p, "text")) text += *t;
        } else if (*type == "thinking") {
            auto th = field(p, "thinking");
            if (!th) continue;
            if (th->is_string()) {
                reasoning += std::string_view(*th);
            } else if (th->is_array()) {
                for (dom::element q : dom::array(*th))
                    if (auto t = string_field(q, "text")) reasoning += *t;
            }
        }
    }
}

std::optional<TokenUsage> usage_of(dom::element u, bool details) {
    if (!u.is_object()) return std::nullopt;
    static constexpr std::string_view names[] = {"prompt_tokens", "completion_tokens", "total_tokens",
                                                 "completion_tokens_details", "prompt_tokens_details"};
    std::optional<dom::element> f[std::size(names)];
    pick_fields(u, names, f);
    TokenUsage t;
    t.prompt_tokens = if_int(f[0]).value_or(0);
    t.completion_tokens = if_int(f[1]).value_or(0);
    t.total_tokens = if_int(f[2]).value_or(0);
    if (details) {
        if (auto d = if_object(f[3])) t.completion_tokens_details = to_boost_json(*d).as_object();
        if (auto d = if_object(f[4])) t.prompt_tokens_details = to_boost_json(*d).as_object();
    }
    return t;
}

std::string arguments_text(dom::element e) {
    if (e.is_string()) return std::string(std::string_view(e));
    if (e.is_null()) return {};
    // Gateways that send the arguments as an object: keep them as JSON text.
    return json::serialize(to_boost_json(e));
}

[[noreturn]] void throw_in_band(std::string_view provider, dom::element err) {
    ProviderErrorInfo info;
    info.provider = std::string(provider);
    info.status = 200;
    if (err.is_object()) {
        if (auto m = field(err, "message"); m && truthy(*m))
            info.message = m->is_string() ? std::string(std::string_view(*m)) : scalar_text(*m);
        auto code = field(err, "code");
        if (code && !code->is_null()) info.code = scalar_text(*code);
        if (auto t = string_field(err, "type")) info.type = std::string(*t);
        if (info.type.empty()) info.type = info.code;
    } else if (err.is_string()) {
        info.message = std::string(std::string_view(err));
    }
    if (info.message.empty()) info.message = "An error occurred during streaming";
    throw StreamError(std::move(info));
}

}  // namespace

namespace {

// The keys each parser reads, in the order of its enum: one walk over an object
// (pick_fields) instead of a lookup per key.
enum RootKey { root_error, root_choices, root_usage, root_id, root_created, root_model, root_service_tier,
               root_fingerprint, root_keys };
constexpr std::string_view root_names[] = {"error", "choices", "usage", "id", "created", "model", "service_tier",
                                           "system_fingerprint"};
enum ChoiceKey { choice_index, choice_finish, choice_logprobs, choice_message, choice_delta, choice_keys };
constexpr std::string_view choice_names[] = {"index", "finish_reason", "logprobs", "message", "delta"};
enum MessageKey { msg_content, msg_refusal, msg_reasoning_content, msg_reasoning, msg_annotations,
                  msg_function_call, msg_tool_calls, msg_keys };
constexpr std::string_view message_names[] = {"content", "refusal", "reasoning_content", "reasoning",
                                              "annotations", "function_call", "tool_calls"};
enum CallKey { call_function, call_id, call_type, call_index, call_keys };
constexpr std::string_view call_names[] = {"function", "id", "type", "index"};
enum FunctionKey { fn_name, fn_arguments, fn_keys };
constexpr std::string_view function_names[] = {"name", "arguments"};

using Picked = std::optional<dom::element>;

ToolCallPart tool_call_of(dom::element tc) {
    ToolCallPart p;
    Picked f[call_keys];
    pick_fields(tc, call_names, f);
    if (auto fn = if_object(f[call_function])) {
        Picked g[fn_keys];
        pick_fields(*fn, function_names, g);
        if (g[fn_name] && !g[fn_name]->is_null()) p.function.name = scalar_text(*g[fn_name]);
        if (g[fn_arguments]) p.function.arguments = arguments_text(*g[fn_arguments]);
    }
    if (f[call_id] && !f[call_id]->is_null()) p.id = scalar_text(*f[call_id]);
    if (f[call_type] && !f[call_type]->is_null()) p.type = scalar_text(*f[call_type]);
    auto parsed = parse_tool_arguments(p.function.arguments);
    p.function.arguments_parsed = std::move(parsed.value);
    p.function.arguments_parse_error = parsed.parse_error;
    return p;
}

void read_message(dom::element msg, AssistantMessage& am) {
    Picked f[msg_keys];
    pick_fields(msg, message_names, f);
    if (const auto& content = f[msg_content]) {
        if (content->is_string()) {
            am.content = std::string(std::string_view(*content));
        } else if (content->is_array()) {
            std::string text, reasoning;
            split_content_parts(dom::array(*content), text, reasoning);
            if (!text.empty()) am.content = text;
            if (!reasoning.empty()) am.reasoning_content = reasoning;
        }
    }
    if (auto s = if_string(f[msg_refusal])) am.refusal = std::string(*s);
    if (auto s = if_string(f[msg_reasoning_content]))
        am.reasoning_content = std::string(*s);
    else if (auto s2 = if_string(f[msg_reasoning]))
        am.reasoning_content = std::string(*s2);
    if (auto a = if_array(f[msg_annotations])) {
        std::vector<json::object> anns;
        for (dom::element x : *a)
            if (x.is_object()) anns.push_back(to_boost_json(x).as_object());
        am.annotations = std::move(anns);
    }
    if (auto fc = if_object(f[msg_function_call])) am.function_call = to_boost_json(*fc).as_object();
    if (auto tcs = if_array(f[msg_tool_calls]); tcs && tcs->size() > 0) {
        std::vector<ToolCallPart> calls;
        for (dom::element tc : *tcs)
            if (tc.is_object()) calls.push_back(tool_call_of(tc));
        if (!calls.empty()) am.tool_calls = std::move(calls);
    }
}

}  // namespace

namespace {
// `owned`, when given, holds `body` and is moved into the response's raw payload
// instead of copied (the document is parsed into the parser's own buffers first).
ChatResponse parse_chat_body(std::string_view body, std::string_view provider, std::string* owned) {
    detail::LeasedParser lease;  // held while the document is read
    dom::parser& parser = lease.get();
    dom::element root;
    if (parser.parse(body.data(), body.size(), true).get(root) != simdjson::SUCCESS || !root.is_object()) {
        throw ResponseFormatError(ProviderErrorInfo{.provider = std::string(provider),
                                                    .status = 200,
                                                    .type = "invalid_response",
                                                    .message = "response body is not a JSON object: " +
                                                               net::quote_peer_bytes(body)});
    }
    Picked top[root_keys];
    pick_fields(root, root_names, top);
    if (const auto& e = top[root_error]; e && truthy(*e) && !top[root_choices]) throw_in_band(provider, *e);

    ChatResponse r;
    if (auto choices = if_array(top[root_choices])) {
        for (dom::element c : *choices) {
            if (!c.is_object()) continue;
            Picked f[choice_keys];
            pick_fields(c, choice_names, f);
            ChatChoice ch;
            ch.index = if_int(f[choice_index]).value_or(0);
            ch.finish_reason = map_finish_nonstream(if_string(f[choice_finish]));
            if (auto lp = if_object(f[choice_logprobs])) ch.logprobs = to_boost_json(*lp).as_object();
            if (auto m = if_object(f[choice_message])) read_message(*m, ch.message);
            r.choices.push_back(std::move(ch));
        }
    }
    if (top[root_usage]) r.usage = usage_of(*top[root_usage], true);
    if (auto s = if_string(top[root_id])) r.id = std::string(*s);
    r.created = if_int(top[root_created]).value_or(0);
    if (auto s = if_string(top[root_model])) r.model = std::string(*s);
    if (auto s = if_string(top[root_service_tier])) r.service_tier = std::string(*s);
    if (auto s = if_string(top[root_fingerprint])) r.system_fingerprint = std::string(*s);
    r.raw = owned ? RawJson(std::move(*owned)) : RawJson(std::string(body));
    return r;
}
}  // namespace

ChatResponse parse_chat_response(std::string_view body, std::string_view provider) {
    return parse_chat_body(body, provider, nullptr);
}

ChatResponse parse_chat_response_owned(std::string body, std::string_view provider) {
    return parse_chat_body(body, provider, &body);
}

bool ChunkMapper::on_event(std::string_view event, std::string_view data, const Emit& emit) {
    if (done_) return false;
    if (data.substr(0, 6) == "[DONE]") {
        done_ = true;
        return false;
    }
    if (data.empty() && event != "error") return true;  // keep-alive style empty event
    dom::element chunk;
    detail::LeasedParser lease;  // held until the document's last use below
    if (lease.get().parse(data.data(), data.size(), true).get(chunk) != simdjson::SUCCESS) {
        if (event == "error") {
            ProviderErrorInfo info{
                .provider = provider_, .status = 200, .type = "error", .message = net::quote_peer_bytes(data)};
            throw StreamError(std::move(info));
        }
        throw ResponseFormatError(ProviderErrorInfo{.provider = provider_,
                                                    .status = 200,
                                                    .type = "invalid_chunk",
                                                    .message = "stream chunk is not valid JSON: " +
                                                               net::quote_peer_bytes(data)});
    }
    Picked top[root_keys];
    pick_fields(chunk, root_names, top);
    const auto& err = top[root_error];
    const bool in_band = err && truthy(*err);
    if (chunk.is_object()) map_chunk(top, emit);
    if (in_band) throw_in_band(provider_, *err);
    if (event == "error") throw_in_band(provider_, chunk);
    return true;
}

void ChunkMapper::map_chunk(const std::optional<dom::element>* top, const Emit& emit) {
    std::optional<dom::element> choice;
    Picked cf[choice_keys];
    if (auto choices = if_array(top[root_choices])) {
        for (dom::element c : *choices) {
            if (!c.is_object()) continue;
            pick_fields(c, choice_names, cf);
            const auto& idx = cf[choice_index];
            // Only choice index 0 is folded (n>1 streams interleave other indexes).
            if (!idx || idx->is_null() || int_value(*idx) == 0) {
                choice = c;
                break;
            }
        }
    }
    if (choice) {
        if (auto delta = if_object(cf[choice_delta])) {
            Picked f[msg_keys];
            pick_fields(*delta, message_names, f);
            std::string text, reasoning;
            if (const auto& c = f[msg_content]) {
                if (c->is_string())
                    text = std::string(std::string_view(*c));
                else if (c->is_array())
                    split_content_parts(dom::array(*c), text, reasoning);
            }
            if (auto s = if_string(f[msg_reasoning_content]); s && !s->empty())
                reasoning += *s;
            else if (auto s2 = if_string(f[msg_reasoning]); s2 && !s2->empty())
                reasoning += *s2;
            if (!reasoning.empty()) emit(StreamDelta{.reasoning_delta = std::move(reasoning)});
            if (!text.empty()) emit(StreamDelta{.content_delta = std::move(text)});
            if (auto tcs = if_array(f[msg_tool_calls])) {
                for (dom::element tc : *tcs) {
                    if (!tc.is_object()) continue;
                    Picked t[call_keys];
                    pick_fields(tc, call_names, t);
                    StreamDelta d;
                    if (const auto& i = t[call_index]; i && (i->is_int64() || i->is_uint64()))
                        d.tool_call_index = int(*int_value(*i));
                    if (const auto& id = t[call_id]) d.tool_call_id = id->is_null() ? std::string() : scalar_text(*id);
                    if (auto fn = if_object(t[call_function])) {
                        Picked g[fn_keys];
                        pick_fields(*fn, function_names, g);
                        if (g[fn_name] && !g[fn_name]->is_null()) d.tool_call_name_delta = scalar_text(*g[fn_name]);
                        if (g[fn_arguments] && !g[fn_arguments]->is_null())
                            d.tool_call_args_delta = arguments_text(*g[fn_arguments]);
                    }
                    if (!d.is_tool_fragment()) d.tool_call_id = std::string();  // still a fragment of the current call
                    emit(std::move(d));
                }
            }
            if (auto fc = if_object(f[msg_function_call])) {
                Picked g[fn_keys];
                pick_fields(*fc, function_names, g);
                StreamDelta d;
                d.tool_call_index = 0;
                if (auto n = if_string(g[fn_name])) d.tool_call_name_delta = std::string(*n);
                if (g[fn_arguments] && !g[fn_arguments]->is_null()) d.tool_call_args_delta = arguments_text(*g[fn_arguments]);
                emit(std::move(d));
            }
        }
        if (auto f = if_string(cf[choice_finish])) {
            std::optional<FinishReason> fr =
                *f == "function_call" ? std::optional(FinishReason::tool_calls) : finish_reason_from_string(*f);
            if (fr) {
                finish_seen_ = true;
                emit(StreamDelta{.finish_reason = fr});
            }
        }
    }
    // Usage may ride on any chunk: a choices:[] chunk, the finish chunk, an error chunk.
    if (const auto& u = top[root_usage]; u && u->is_object()) {
        auto usage = usage_of(*u, false);
        if (usage->prompt_tokens != 0 || usage->completion_tokens != 0) emit(StreamDelta{.usage = usage});
    }
}

}  // namespace rath::llm::openai
