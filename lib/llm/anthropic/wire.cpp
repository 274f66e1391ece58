#include "lib/llm/anthropic/wire.hpp"

#include "lib/llm/json_util.hpp"

#include <rath/llm/anthropic_client.hpp>
#include <rath/llm/error.hpp>
#include <rath/net/peer_bytes.hpp>

#include <boost/json.hpp>

#include <cmath>

namespace rath::llm::anthropic {

namespace json = boost::json;
namespace dom = simdjson::dom;
using namespace rath::llm::detail;

namespace {

double finite(const char* name, double v) {
    if (!std::isfinite(v)) throw ProviderConfigError(std::string(name) + " must be a finite number");
    return v;
}

json::object tool_use_block(const json::object& call) {
    std::string id, name, args;
    if (auto* v = call.if_contains("id"); v && v->is_string()) id = std::string(v->as_string());
    if (auto* f = call.if_contains("function"); f && f->is_object()) {
        const auto& fo = f->as_object();
        if (auto* n = fo.if_contains("name"); n && n->is_string()) name = std::string(n->as_string());
        if (auto* a = fo.if_contains("arguments")) {
            if (a->is_string())
                args = std::string(a->as_string());
            else if (a->is_object())
                args = json::serialize(*a);
        }
    }
    auto parsed = parse_tool_arguments(args);
    return json::object{{"type", "tool_use"},
                        {"id", id},
                        {"name", name},
                        {"input", parsed.value ? json::value(*parsed.value) : json::value(json::object{})}};
}

std::optional<json::value> map_tool_choice(const json::value& tc) {
    if (tc.is_string()) {
        auto s = tc.as_string();
        if (s == "none") return json::object{{"type", "none"}};
        if (s == "required") return json::object{{"type", "any"}};
        return std::nullopt;  // "auto", "" and unknown strings: Anthropic's default
    }
    if (tc.is_object()) {
        const auto& o = tc.as_object();
        auto* type = o.if_contains("type");
        auto* fn = o.if_contains("function");
        if (type && type->is_string() && type->as_string() == "function" && fn && fn->is_object()) {
            auto* n = fn->as_object().if_contains("name");
            if (n && n->is_string() && !n->as_string().empty())
                return json::object{{"type", "tool"}, {"name", n->as_string()}};
        }
        return tc;
    }
    return std::nullopt;
}

}  // namespace

json::object build_messages_body(const ChatRequest& r, const std::string& model, bool stream,
                                 detail::TransportExtras* transport) {
    std::vector<std::string> system_parts;
    bool has_system = false;
    json::array msgs;
    for (const auto& m : r.messages) {
        const std::string text = m.content.value_or("");
        if (m.role == "system" || m.role == "developer") {
            has_system = true;
            system_parts.push_back(text);
        } else if (m.role == "tool") {
            json::object block{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id.value_or("")}, {"content", text}};
            msgs.emplace_back(json::object{{"role", "user"}, {"content", json::array{std::move(block)}}});
        } else if (m.role == "assistant" && m.tool_calls && !m.tool_calls->empty()) {
            json::array blocks;
            if (!text.empty()) blocks.emplace_back(json::object{{"type", "text"}, {"text", text}});
            for (const auto& c : *m.tool_calls) blocks.emplace_back(tool_use_block(c));
            msgs.emplace_back(json::object{{"role", "assistant"}, {"content", std::move(blocks)}});
        } else {
            const char* role = (m.role == "user" || m.role == "assistant") ? m.role.c_str() : "user";
            msgs.emplace_back(json::object{{"role", role}, {"content", text}});
        }
    }
    json::object body;
    body["model"] = model;
    body["messages"] = std::move(msgs);
    std::int64_t max_tokens = anthropic_default_max_tokens;
    if (r.sampling.max_tokens && *r.sampling.max_tokens != 0)
        max_tokens = *r.sampling.max_tokens;
    else if (r.sampling.max_completion_tokens && *r.sampling.max_completion_tokens != 0)
        max_tokens = *r.sampling.max_completion_tokens;
    body["max_tokens"] = max_tokens;
    if (has_system) {
        std::string joined;
        for (const auto& p : system_parts) {
            if (p.empty()) continue;
            if (!joined.empty()) joined += "\n\n";
            joined += p;
        }
        body["system"] = joined;
    }
    if (r.sampling.temperature) body["temperature"] = finite("temperature", *r.sampling.temperature);
    if (r.sampling.top_p) body["top_p"] = finite("top_p", *r.sampling.top_p);
    if (r.sampling.stop) {
        json::array seqs;
        if (auto* one = std::get_if<std::string>(&*r.sampling.stop))
            seqs.emplace_back(json::string(*one));
        else
            for (const auto& s : std::get<std::vector<std::string>>(*r.sampling.stop)) seqs.emplace_back(json::string(s));
        body["stop_sequences"] = std::move(seqs);
    }
    if (r.sampling.metadata) body["metadata"] = *r.sampling.metadata;
    if (r.tools && !r.tools->empty()) {
        json::array tools;
        for (const auto& t : *r.tools) {
            json::object o;
            o["name"] = t.name;
            o["input_schema"] = t.parameters.empty() ? json::object{{"type", "object"}, {"properties", json::object{}}}
                                                     : t.parameters;
            if (t.description) o["description"] = *t.description;
            tools.emplace_back(std::move(o));
        }
        body["tools"] = std::move(tools);
    }
    if (r.sampling.tool_choice)
        if (auto tc = map_tool_choice(*r.sampling.tool_choice)) body["tool_choice"] = *tc;
    json::object extras = r.sampling.extra_create_args;
    extras.erase("stream");
    TransportExtras t = take_transport_extras(extras);
    for (auto& kv : extras) body[kv.key()] = kv.value();
    for (auto& kv : t.body) body[kv.key()] = kv.value();
    if (stream) body["stream"] = true;
    if (transport) *transport = std::move(t);
    return body;
}

FinishReason map_stop_reason(std::string_view s) {
    if (s == "max_tokens") return FinishReason::length;
    if (s == "tool_use") return FinishReason::tool_calls;
    if (s == "refusal") return FinishReason::content_filter;
    return FinishReason::stop;
}

ChatResponse parse_messages_response(std::string_view body) {
    detail::LeasedParser lease;  // held while the document is read
    dom::parser& parser = lease.get();
    dom::element root;
    if (parser.parse(body.data(), body.size(), true).get(root) != simdjson::SUCCESS || !root.is_object()) {
        throw ResponseFormatError(ProviderErrorInfo{.provider = "anthropic",
                                                    .status = 200,
                                                    .type = "invalid_response",
                                                    .message = "response body is not a JSON object: " +
                                                               net::quote_peer_bytes(body)});
    }
    if (auto e = object_field(root, "error")) {
        ProviderErrorInfo info{.provider = "anthropic", .status = 200};
        if (auto t = string_field(dom::element(*e), "type")) info.type = std::string(*t);
        if (auto m = string_field(dom::element(*e), "message")) info.message = std::string(*m);
        throw StreamError(std::move(info));
    }
    ChatResponse r;
    r.raw = RawJson(std::string(body));
    ChatChoice ch;
    std::vector<std::string> texts;
    std::string reasoning;
    bool has_reasoning = false;
    std::vector<ToolCallPart> calls;
    if (auto content = array_field(root, "content")) {
        for (dom::element b : *content) {
            auto type = string_field(b, "type");
            if (!type) continue;
            if (*type == "text") {
                if (auto t = string_field(b, "text")) texts.emplace_back(*t);
            } else if (*type == "thinking") {
                if (auto t = string_field(b, "thinking")) {
                    reasoning += *t;
                    has_reasoning = true;
                }
            } else if (*type == "tool_use") {
                ToolCallPart p;
                if (auto id = string_field(b, "id")) p.id = std::string(*id);
                if (auto n = string_field(b, "name")) p.function.name = std::string(*n);
                auto input = field(b, "input");
                if (input && input->is_object()) {
                    json::value v = to_boost_json(*input);
                    p.function.arguments = json::serialize(v);
                    p.function.arguments_parsed = v.as_object();
                } else if (input && truthy(*input)) {
                    p.function.arguments = json::serialize(to_boost_json(*input));
                } else {
                    p.function.arguments = "{}";
                    p.function.arguments_parsed = json::object{};
                }
                calls.push_back(std::move(p));
            }
        }
    }
    if (!texts.empty()) {
        std::string joined;
        for (std::size_t i = 0; i < texts.size(); ++i) {
            if (i) joined += "\n";
            joined += texts[i];
        }
        ch.message.content = joined;
    }
    if (has_reasoning && !reasoning.empty()) ch.message.reasoning_content = reasoning;
    if (!calls.empty()) ch.message.tool_calls = std::move(calls);
    auto sr = string_field(root, "stop_reason");
    ch.finish_reason = sr ? map_stop_reason(*sr) : FinishReason::stop;
    r.choices.push_back(std::move(ch));
    if (auto u = field(root, "usage"); u && u->is_object()) {
        std::int64_t in = int_field(*u, "input_tokens").value_or(0);
        std::int64_t out = int_field(*u, "output_tokens").value_or(0);
        if (in != 0 || out != 0) r.usage = TokenUsage{.prompt_tokens = in, .completion_tokens = out, .total_tokens = in + out};
    }
    if (auto s = string_field(root, "id")) r.id = std::string(*s);
    if (auto s = string_field(root, "model")) r.model = std::string(*s);
    return r;
}

void EventMapper::emit_usage(const Emit& emit) {
    if (input_tokens_ == 0 && output_tokens_ == 0) return;
    emit(StreamDelta{.usage = TokenUsage{.prompt_tokens = input_tokens_,
                                         .completion_tokens = output_tokens_,
                                         .total_tokens = input_tokens_ + output_tokens_}});
}

void EventMapper::on_event(std::string_view event, std::string_view data, const Emit& emit) {
    if (event == "ping") return;
    if (data.empty()) return;
    dom::element ev;
    detail::LeasedParser lease;  // held until the document's last use below
    if (lease.get().parse(data.data(), data.size(), true).get(ev) != simdjson::SUCCESS) {
        if (event == "error")
            throw StreamError(ProviderErrorInfo{
                .provider = "anthropic", .status = 200, .type = "error", .message = net::quote_peer_bytes(data)});
        throw ResponseFormatError(ProviderErrorInfo{.provider = "anthropic",
                                                    .status = 200,
                                                    .type = "invalid_event",
                                                    .message = "stream event is not valid JSON: " +
                                                               net::quote_peer_bytes(data)});
    }
    std::string_view type = event;
    if (auto t = string_field(ev, "type")) type = *t;
    if (type == "ping") return;
    if (type == "error" || event == "error") {
        ProviderErrorInfo info{.provider = "anthropic", .status = 200};
        dom::element err = ev;
        if (auto e = object_field(ev, "error")) err = dom::element(*e);
        if (auto t = string_field(err, "type")) info.type = std::string(*t);
        if (auto m = string_field(err, "message")) info.message = std::string(*m);
        if (info.message.empty()) info.message = "An error occurred during streaming";
        throw StreamError(std::move(info));
    }
    if (type == "message_start") {
        if (auto msg = field(ev, "message"))
            if (auto u = field(*msg, "usage"); u && u->is_object()) {
                input_tokens_ = int_field(*u, "input_tokens").value_or(input_tokens_);
                output_tokens_ = int_field(*u, "output_tokens").value_or(output_tokens_);
                emit_usage(emit);
            }
        return;
    }
    const std::int64_t index = int_field(ev, "index").value_or(0);
    if (type == "content_block_start") {
        auto block = field(ev, "content_block");
        if (!block) return;
        auto btype = string_field(*block, "type");
        if (!btype) return;
        if (*btype == "tool_use") {
            StreamDelta d;
            d.tool_call_index = int(index);
            auto id = field(*block, "id");
            d.tool_call_id = (id && !id->is_null()) ? scalar_text(*id) : std::string();
            auto n = field(*block, "name");
            d.tool_call_name_delta = (n && !n->is_null()) ? scalar_text(*n) : std::string();
            ToolBlock tb;
            if (auto in = field(*block, "input"); in && truthy(*in)) tb.input_json = json::serialize(to_boost_json(*in));
            tool_blocks_[index] = std::move(tb);
            emit(std::move(d));
        } else if (*btype == "text") {
            if (auto t = string_field(*block, "text"); t && !t->empty()) emit(StreamDelta{.content_delta = std::string(*t)});
        } else if (*btype == "thinking") {
            if (auto t = string_field(*block, "thinking"); t && !t->empty())
                emit(StreamDelta{.reasoning_delta = std::string(*t)});
        }
        return;
    }
    if (type == "content_block_delta") {
        auto delta = field(ev, "delta");
        if (!delta) return;
        auto dtype = string_field(*delta, "type");
        if (!dtype) return;
        if (*dtype == "text_delta") {
            if (auto t = string_field(*delta, "text"); t && !t->empty()) emit(StreamDelta{.content_delta = std::string(*t)});
        } else if (*dtype == "thinking_delta") {
            if (auto t = string_field(*delta, "thinking"); t && !t->empty())
                emit(StreamDelta{.reasoning_delta = std::string(*t)});
        } else if (*dtype == "input_json_delta") {
            if (auto p = string_field(*delta, "partial_json"); p && !p->empty()) {
                tool_blocks_[index].got_delta = true;
                emit(StreamDelta{.tool_call_index = int(index), .tool_call_args_delta = std::string(*p)});
            }
        }
        return;
    }
    if (type == "content_block_stop") {
        // Gateways that put the whole input in content_block_start and send no deltas.
        if (auto it = tool_blocks_.find(index); it != tool_blocks_.end()) {
            if (!it->second.got_delta && !it->second.input_json.empty())
                emit(StreamDelta{.tool_call_index = int(index), .tool_call_args_delta = it->second.input_json});
            tool_blocks_.erase(it);
        }
        return;
    }
    if (type == "message_delta") {
        if (auto delta = field(ev, "delta")) {
            if (auto sr = string_field(*delta, "stop_reason")) {
                finish_seen_ = true;
                emit(StreamDelta{.finish_reason = map_stop_reason(*sr)});
            }
        }
        bool got = false;
        auto take = [&](dom::element u) {
            if (!u.is_object()) return;
            if (auto in = int_field(u, "input_tokens")) input_tokens_ = *in, got = true;
            if (auto out = int_field(u, "output_tokens")) output_tokens_ = *out, got = true;
        };
        if (auto delta = field(ev, "delta"))
            if (auto u = field(*delta, "usage")) take(*u);
        if (auto u = field(ev, "usage")) take(*u);
        if (got) emit_usage(emit);
        return;
    }
    if (type == "message_stop") stopped_ = true;
}

}  // namespace rath::llm::anthropic
