#include "tools/rath-fake-llm/src/request.hpp"

#include "tools/rath-fake-llm/src/text.hpp"

#include <simdjson.h>

#include <string_view>

namespace rath::fake_llm::detail {

namespace od = simdjson::ondemand;
using simdjson::error_code;

void ChatRequest::clear() {
    api = Api::openai;
    model.clear();
    stream = include_usage = false;
    messages = 0;
    prompt_tokens = 0;
    last_role.clear();
    last_text.clear();
    last_tool_call_id.clear();
    tools = 0;
    first_tool_name.clear();
}

void EmbeddingRequest::clear() {
    model.clear();
    inputs.clear();
    dimensions = 0;
    base64 = false;
}

namespace {

// One parser per io thread: a parse never suspends, and the parser keeps its
// buffers between requests.
od::parser& thread_parser() {
    thread_local od::parser parser;
    return parser;
}

simdjson::padded_string_view padded(std::string& body) {
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
    return simdjson::padded_string_view(body.data(), body.size(), body.capacity());
}

// What a content part contributed, for text extraction and Anthropic tool results.
struct PartInfo {
    bool tool_result = false;
    std::string_view tool_use_id;
};

error_code append_text(od::value v, std::string& out, PartInfo* info, int depth);

// A part object contributes p.text ?? p.content ?? "" (as the peers' textOf does).
error_code append_part(od::object obj, std::string& out, PartInfo* info, int depth) {
    std::string_view text;
    bool has_text = false;
    std::string content;  // only used when a part nests content (tool_result blocks)
    bool has_content = false;
    for (auto field : obj) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        od::value v;
        if (auto e = field.value().get(v)) return e;
        if (key == "text") {
            bool null = false;
            if (auto e = v.is_null().get(null)) return e;
            if (null) continue;
            od::json_type t;
            if (auto e = v.type().get(t)) return e;
            if (t == od::json_type::string) {
                if (auto e = v.get_string().get(text)) return e;
            } else {
                text = v.raw_json_token();
            }
            has_text = true;
        } else if (key == "content") {
            bool null = false;
            if (auto e = v.is_null().get(null)) return e;
            if (null) continue;
            if (auto e = append_text(v, content, nullptr, depth + 1)) return e;
            has_content = true;
        } else if (key == "type" && info) {
            std::string_view type;
            if (v.get_string().get(type) == simdjson::SUCCESS && type == "tool_result") info->tool_result = true;
        } else if (key == "tool_use_id" && info) {
            std::string_view id;
            if (v.get_string().get(id) == simdjson::SUCCESS) info->tool_use_id = id;
        }
    }
    if (has_text)
        out += text;
    else if (has_content)
        out += content;
    return simdjson::SUCCESS;
}

error_code append_text(od::value v, std::string& out, PartInfo* info, int depth) {
    if (depth > 16) return simdjson::DEPTH_ERROR;
    od::json_type t;
    if (auto e = v.type().get(t)) return e;
    switch (t) {
        case od::json_type::string: {
            std::string_view s;
            if (auto e = v.get_string().get(s)) return e;
            out += s;
            return simdjson::SUCCESS;
        }
        case od::json_type::null:
            return simdjson::SUCCESS;
        case od::json_type::array: {
            od::array arr;
            if (auto e = v.get_array().get(arr)) return e;
            for (auto el : arr) {
                od::value part;
                if (auto e = el.get(part)) return e;
                od::json_type pt;
                if (auto e = part.type().get(pt)) return e;
                if (pt == od::json_type::object) {
                    od::object obj;
                    if (auto e = part.get_object().get(obj)) return e;
                    if (auto e = append_part(obj, out, info, depth)) return e;
                } else {
                    if (auto e = append_text(part, out, nullptr, depth + 1)) return e;
                }
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::object: {
            od::object obj;
            if (auto e = v.get_object().get(obj)) return e;
            return append_part(obj, out, info, depth);
        }
        default: {  // numbers and booleans read as their JSON text, like String(x)
            std::string_view raw = v.raw_json_token();
            while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
                raw.remove_suffix(1);
            out += raw;
            return simdjson::SUCCESS;
        }
    }
}

error_code parse_message(od::value v, ChatRequest& out) {
    od::object obj;
    if (auto e = v.get_object().get(obj)) return e;
    out.last_role.clear();
    out.last_text.clear();
    out.last_tool_call_id.clear();
    PartInfo info;
    for (auto field : obj) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        od::value fv;
        if (auto e = field.value().get(fv)) return e;
        if (key == "role") {
            std::string_view role;
            if (auto e = fv.get_string().get(role)) return e;
            out.last_role.assign(role);
        } else if (key == "content") {
            if (auto e = append_text(fv, out.last_text, out.api == Api::anthropic ? &info : nullptr, 0)) return e;
        } else if (key == "tool_call_id") {
            std::string_view id;
            if (fv.get_string().get(id) == simdjson::SUCCESS) out.last_tool_call_id.assign(id);
        }
    }
    if (info.tool_result && out.last_role == "user") {
        out.last_role = "tool";
        out.last_tool_call_id.assign(info.tool_use_id);
    }
    out.prompt_tokens += count_words(out.last_text) + 4;
    ++out.messages;
    return simdjson::SUCCESS;
}

error_code parse_tools(od::value v, ChatRequest& out) {
    od::array arr;
    if (auto e = v.get_array().get(arr)) return e;
    for (auto el : arr) {
        od::object tool;
        if (auto e = el.get_object().get(tool)) return e;
        ++out.tools;
        if (out.tools > 1) continue;
        // OpenAI: {"type":"function","function":{"name":...}}; Anthropic: {"name":...}.
        for (auto field : tool) {
            std::string_view key;
            if (auto e = field.unescaped_key().get(key)) return e;
            if (key == "name") {
                std::string_view name;
                if (field.value().get_string().get(name) == simdjson::SUCCESS) out.first_tool_name.assign(name);
            } else if (key == "function") {
                od::object fn;
                if (field.value().get_object().get(fn) != simdjson::SUCCESS) continue;
                for (auto f : fn) {
                    std::string_view k;
                    if (auto e = f.unescaped_key().get(k)) return e;
                    std::string_view name;
                    if (k == "name" && f.value().get_string().get(name) == simdjson::SUCCESS)
                        out.first_tool_name.assign(name);
                }
            }
        }
    }
    return simdjson::SUCCESS;
}

const char* describe(error_code e) {
    switch (e) {
        case simdjson::INCORRECT_TYPE: return "a field has the wrong type";
        case simdjson::DEPTH_ERROR: return "the document is nested too deeply";
        default: return simdjson::error_message(e);
    }
}

}  // namespace

bool parse_chat_request(std::string& body, Api api, ChatRequest& out, std::string& error) {
    out.clear();
    out.api = api;
    auto& parser = thread_parser();
    od::document doc;
    bool have_messages = false;
    auto fail = [&](std::string_view what) {
        error.assign(what);
        return false;
    };
    if (parser.iterate(padded(body)).get(doc))
        return fail("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)");
    od::object root;
    if (doc.get_object().get(root)) return fail("the request body must be a JSON object");
    std::string scratch;
    for (auto field : root) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return fail("the request body is not valid JSON");
        od::value v;
        if (field.value().get(v)) return fail("the request body is not valid JSON");
        error_code e = simdjson::SUCCESS;
        if (key == "model") {
            std::string_view model;
            e = v.get_string().get(model);
            if (e) return fail("'model' must be a string");
            out.model.assign(model);
        } else if (key == "stream") {
            bool null = false;
            if (v.is_null().get(null) == simdjson::SUCCESS && null) continue;
            e = v.get_bool().get(out.stream);
            if (e) return fail("'stream' must be a boolean");
        } else if (key == "stream_options") {
            od::object so;
            if (v.get_object().get(so) != simdjson::SUCCESS) continue;  // null: no options
            for (auto f : so) {
                std::string_view k;
                if (f.unescaped_key().get(k)) return fail("the request body is not valid JSON");
                bool b = false;
                if (k == "include_usage" && f.value().get_bool().get(b) == simdjson::SUCCESS) out.include_usage = b;
            }
        } else if (key == "messages") {
            od::array arr;
            if (v.get_array().get(arr)) return fail("'messages' must be an array");
            have_messages = true;
            for (auto el : arr) {
                od::value m;
                if (el.get(m) || parse_message(m, out))
                    return fail("messages[" + std::to_string(out.messages) + "] is not a valid message object");
            }
        } else if (key == "tools") {
            bool null = false;
            if (v.is_null().get(null) == simdjson::SUCCESS && null) continue;
            if (auto te = parse_tools(v, out)) return fail(std::string("'tools' is not valid: ") + describe(te));
        } else if (key == "system" && api == Api::anthropic) {
            scratch.clear();
            if (auto se = append_text(v, scratch, nullptr, 0)) return fail(std::string("'system' is not valid: ") + describe(se));
            out.prompt_tokens += count_words(scratch) + 4;
        }
    }
    if (!have_messages || out.messages == 0) {
        return fail(api == Api::openai ? "messages is required: a non-empty array of messages"
                                        : "messages: at least one message is required");
    }
    return true;
}

bool parse_embedding_request(std::string& body, EmbeddingRequest& out, std::string& error) {
    out.clear();
    auto& parser = thread_parser();
    od::document doc;
    auto fail = [&](std::string_view what) {
        error.assign(what);
        return false;
    };
    if (parser.iterate(padded(body)).get(doc)) return fail("We could not parse the JSON body of your request.");
    od::object root;
    if (doc.get_object().get(root)) return fail("the request body must be a JSON object");
    bool have_input = false;
    for (auto field : root) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return fail("the request body is not valid JSON");
        od::value v;
        if (field.value().get(v)) return fail("the request body is not valid JSON");
        if (key == "model") {
            std::string_view model;
            if (v.get_string().get(model)) return fail("'model' must be a string");
            out.model.assign(model);
        } else if (key == "encoding_format") {
            std::string_view f;
            if (v.get_string().get(f) || (f != "float" && f != "base64"))
                return fail("'encoding_format' must be \"float\" or \"base64\"");
            out.base64 = f == "base64";
        } else if (key == "dimensions") {
            std::uint64_t d = 0;
            if (v.get_uint64().get(d) || d == 0 || d > 65536) return fail("'dimensions' must be an integer between 1 and 65536");
            out.dimensions = static_cast<std::size_t>(d);
        } else if (key == "input") {
            have_input = true;
            od::json_type t;
            if (v.type().get(t)) return fail("'input' is not valid JSON");
            if (t == od::json_type::string) {
                std::string_view s;
                if (v.get_string().get(s)) return fail("'input' is not valid JSON");
                out.inputs.emplace_back(s);
                continue;
            }
            od::array arr;
            if (v.get_array().get(arr)) return fail("'input' must be a string, an array of strings or an array of token arrays");
            bool token_ids = false;  // a flat array of integers is one tokenized input
            std::string joined;
            for (auto el : arr) {
                od::value item;
                od::json_type it;
                if (el.get(item) || item.type().get(it)) return fail("'input' is not valid JSON");
                if (it == od::json_type::string) {
                    std::string_view s;
                    if (item.get_string().get(s)) return fail("'input' is not valid JSON");
                    out.inputs.emplace_back(s);
                } else if (it == od::json_type::number) {
                    std::uint64_t id = 0;
                    if (item.get_uint64().get(id)) return fail("token ids in 'input' must be non-negative integers");
                    token_ids = true;
                    joined += (joined.empty() ? "t" : " t") + std::to_string(id);
                } else if (it == od::json_type::array) {
                    std::string words;
                    od::array tokens;
                    if (item.get_array().get(tokens)) return fail("'input' is not valid JSON");
                    for (auto tk : tokens) {
                        std::uint64_t id = 0;
                        if (tk.get_uint64().get(id)) return fail("token ids in 'input' must be non-negative integers");
                        words += (words.empty() ? "t" : " t") + std::to_string(id);
                    }
                    out.inputs.push_back(std::move(words));
                } else {
                    return fail("'input' must be a string, an array of strings or an array of token arrays");
                }
            }
            if (token_ids) out.inputs.push_back(std::move(joined));
        }
    }
    if (!have_input || out.inputs.empty()) return fail("'input' is required and must not be empty");
    return true;
}

}  // namespace rath::fake_llm::detail
