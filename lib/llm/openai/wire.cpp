#include "lib/llm/openai/wire.hpp"

#include "lib/llm/json_util.hpp"
#include "lib/text/json_string.hpp"
#include "lib/text/json_write.hpp"

#include <rath/llm/error.hpp>

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

json::value stop_value(const StopSequences& s) {
    if (auto* one = std::get_if<std::string>(&s)) return json::string(*one);
    json::array a;
    for (const auto& x : std::get<std::vector<std::string>>(s)) a.emplace_back(json::string(x));
    return a;
}

}  // namespace

namespace {

// {"model", "messages"}: the head of every body. `sp` is where its nodes live.
json::object build_head(const ChatRequest& r, const std::string& model, json::storage_ptr sp = {}) {
    json::object body(sp);
    body["model"] = model;
    json::array msgs(sp);
    msgs.reserve(r.messages.size());
    for (const auto& m : r.messages) {
        json::object o(sp);
        o["role"] = m.role;
        if (m.content) o["content"] = *m.content;
        if (m.name) o["name"] = *m.name;
        if (m.tool_call_id) o["tool_call_id"] = *m.tool_call_id;
        if (m.tool_calls) {
            json::array calls(sp);
            for (const auto& c : *m.tool_calls) calls.emplace_back(c);
            o["tool_calls"] = std::move(calls);
        }
        msgs.emplace_back(std::move(o));
    }
    body["messages"] = std::move(msgs);
    return body;
}

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

// Every key after "tools", the extra create args merged last (they win).
// Every named tail field that is set, in body order, as visit(key, value); value is a
// JSON value or object, a bool, an int64, a finite double, a string or the stop list.
// The one list both tail writers below follow.
template <class Visit>
void visit_tail_fields(const ChatRequest& r, Visit&& visit) {
    if (r.tool_choice) visit("tool_choice", *r.tool_choice);
    if (r.parallel_tool_calls) visit("parallel_tool_calls", *r.parallel_tool_calls);
    if (r.response_format) visit("response_format", *r.response_format);
    if (r.temperature) visit("temperature", finite("temperature", *r.temperature));
    if (r.top_p) visit("top_p", finite("top_p", *r.top_p));
    if (r.max_completion_tokens) visit("max_completion_tokens", *r.max_completion_tokens);
    if (r.max_tokens) visit("max_tokens", *r.max_tokens);
    if (r.stop) visit("stop", *r.stop);
    if (r.n) visit("n", *r.n);
    if (r.seed) visit("seed", *r.seed);
    if (r.frequency_penalty) visit("frequency_penalty", finite("frequency_penalty", *r.frequency_penalty));
    if (r.presence_penalty) visit("presence_penalty", finite("presence_penalty", *r.presence_penalty));
    if (r.logit_bias) visit("logit_bias", *r.logit_bias);
    if (r.logprobs) visit("logprobs", *r.logprobs);
    if (r.top_logprobs) visit("top_logprobs", *r.top_logprobs);
    if (r.reasoning_effort) visit("reasoning_effort", *r.reasoning_effort);
    if (r.verbosity) visit("verbosity", *r.verbosity);
    if (r.metadata) visit("metadata", *r.metadata);
    if (r.user) visit("user", *r.user);
    if (r.store) visit("store", *r.store);
    if (r.service_tier) visit("service_tier", *r.service_tier);
}

json::object build_tail(const ChatRequest& r, bool stream, detail::TransportExtras* transport,
                        json::storage_ptr sp = {}) {
    json::object body(sp);
    visit_tail_fields(r, [&body](std::string_view key, const auto& value) {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, StopSequences>)
            body[key] = stop_value(value);
        else
            body[key] = value;
    });

    json::object extras = r.extra_create_args;
    if (auto* s = extras.if_contains("stream")) {
        if (!stream && s->is_bool() && s->as_bool())
            throw ProviderConfigError("stream=True is not supported here; use the streaming call instead");
        extras.erase("stream");
    }
    TransportExtras t = take_transport_extras(extras);
    const bool user_stream_options = extras.contains("stream_options") || t.body.contains("stream_options");
    for (auto& kv : extras) body[kv.key()] = kv.value();
    for (auto& kv : t.body) body[kv.key()] = kv.value();
    body["stream"] = stream;
    if (stream && !user_stream_options) body["stream_options"] = json::object({{"include_usage", true}}, sp);
    if (transport) *transport = std::move(t);
    return body;
}

// The tail as text when there are no extra create args (nothing to merge): the same
// bytes as serialize(build_tail(...)) with its first character ',' instead of '{'. It is
// written for every request, and an object per request was most of its cost.
void write_tail(std::string& out, const ChatRequest& r, bool stream) {
    visit_tail_fields(r, [&out](std::string_view key, const auto& value) {
        using T = std::decay_t<decltype(value)>;
        out += ",\"";
        out += key;
        out += "\":";
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
    });
    out += ",\"stream\":";
    out += stream ? "true" : "false";
    if (stream) out += ",\"stream_options\":{\"include_usage\":true}";
    out += '}';
}

// The head written as text, the same bytes as serialize(build_head(...)) without its
// closing brace: the head is most of a body, and a json::object per message (then
// serialized) was most of the cost of building one.
void write_head(std::string& out, const ChatRequest& r, const std::string& model) {
    std::size_t size = 32 + model.size();
    for (const auto& m : r.messages)
        size += 64 + m.role.size() + (m.content ? m.content->size() : 0) + (m.name ? m.name->size() : 0) +
                (m.tool_calls ? 256 * m.tool_calls->size() : 0);
    out.reserve(size);
    out += "{\"model\":";
    append_json_string(out, model);
    out += ",\"messages\":[";
    bool first = true;
    for (const auto& m : r.messages) {
        out += first ? "{\"role\":" : ",{\"role\":";
        first = false;
        append_json_string(out, m.role);
        if (m.content) {
            out += ",\"content\":";
            append_json_string(out, *m.content);
        }
        if (m.name) {
            out += ",\"name\":";
            append_json_string(out, *m.name);
        }
        if (m.tool_call_id) {
            out += ",\"tool_call_id\":";
            append_json_string(out, *m.tool_call_id);
        }
        if (m.tool_calls) {
            out += ",\"tool_calls\":[";
            for (std::size_t i = 0; i < m.tool_calls->size(); ++i) {
                if (i) out += ',';
                rath::detail::append_json_value(out, (*m.tool_calls)[i]);
            }
            out += ']';
        }
        out += '}';
    }
    out += ']';
}

// The tool list's OpenAI encoding, made once per list and shared by every request.
std::shared_ptr<const std::string> encoded_tools(const ToolList& tools) {
    return tools.encoded_shared(ToolList::Encoding::openai,
                                [](const std::vector<FunctionTool>& list) { return json::serialize(build_tools(list)); });
}

bool overrides_head(const json::object& tail) {
    return tail.contains("model") || tail.contains("messages") || tail.contains("tools");
}

// The rest of a whole body after the head: the tools, then every tail key (an extra
// arg naming a head key replaces it in place).
void complete_body(json::object& body, const ChatRequest& r, const json::object& tail) {
    if (r.tools) body["tools"] = build_tools(r.tools->tools());
    for (const auto& kv : tail) body[kv.key()] = kv.value();
}

}  // namespace

json::object build_chat_body(const ChatRequest& r, const std::string& model, bool stream,
                             detail::TransportExtras* transport) {
    json::object body = build_head(r, model);
    complete_body(body, r, build_tail(r, stream, transport));
    return body;
}

namespace {
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

ChatBodyParts build_chat_body_parts(const ChatRequest& r, const std::string& model, bool stream,
                                    detail::TransportExtras* transport) {
    // Every node of the two objects lives in one arena, released at once: a body is
    // built, serialized and dropped, so per-node heap allocations would be pure cost.
    ChatBodyParts out;
    out.parts.reserve(2);
    if (r.extra_create_args.empty()) {
        // Nothing to merge: the whole body is written as text.
        thread_local std::string tail;
        tail.clear();
        write_tail(tail, r, stream);
        auto rest = shared_tail(tail);
        if (transport) *transport = {};
        write_head(out.head, r, model);
        if (r.tools) {
            out.head += ",\"tools\":";
            out.parts.push_back(encoded_tools(*r.tools));
        }
        out.parts.push_back(std::move(rest));
        return out;
    }
    unsigned char first_block[4096];
    json::monotonic_resource arena(first_block, sizeof first_block);
    json::storage_ptr sp(&arena);
    json::object tail = build_tail(r, stream, transport, sp);
    if (overrides_head(tail)) {
        // An extra arg replaces a head key in place: let the object do the merge.
        json::object head = build_head(r, model, sp);
        complete_body(head, r, tail);
        out.head = json::serialize(head);
        return out;
    }
    // The same bytes as serialize(build_chat_body(...)) in three pieces: the head,
    // the tool list's cached encoding (shared, never copied), and the tail.
    write_head(out.head, r, model);
    if (r.tools) {
        out.head += ",\"tools\":";
        out.parts.push_back(encoded_tools(*r.tools));
    }
    auto rest = std::make_shared<std::string>();
    rath::detail::append_json_value(*rest, tail);  // never empty: "stream" is always there
    rest->front() = ',';
    out.parts.push_back(std::move(rest));
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
        std::string head(body.substr(0, 200));
        throw ResponseFormatError(ProviderErrorInfo{.provider = std::string(provider),
                                                    .status = 200,
                                                    .type = "invalid_response",
                                                    .message = "response body is not a JSON object: " + head});
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
            ProviderErrorInfo info{.provider = provider_, .status = 200, .type = "error", .message = std::string(data)};
            throw StreamError(std::move(info));
        }
        throw ResponseFormatError(ProviderErrorInfo{.provider = provider_,
                                                    .status = 200,
                                                    .type = "invalid_chunk",
                                                    .message = "stream chunk is not valid JSON: " +
                                                               std::string(data.substr(0, 200))});
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
