// Script loading (validation with file:line diagnostics) and the script runner.
#include "tools/rath-fake-llm/src/script_data.hpp"

#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/workload.hpp"

#include <boost/json/stream_parser.hpp>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rath::fake_llm {

ScriptError::ScriptError(std::string file, std::size_t line, std::string detail)
    : Error(file + ":" + (line ? std::to_string(line) + ":" : std::string()) + " " + detail),
      file_(std::move(file)),
      line_(line),
      detail_(std::move(detail)) {}

namespace detail {
namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view respond_keys =
    "text, tool_calls, finish_reason, usage, latency_ms, token_delay_ms, fault, retry_after, message, chunks";
constexpr std::string_view match_keys = "role, contains, equals, model, tool_call_id, endpoint";

class Loader {
public:
    Loader(std::string_view text, std::string source) : text_(text), buf_(text), source_(std::move(source)) {}

    ScriptData run() {
        check_syntax();
        auto first = text_.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos || (text_[first] != '{' && text_[first] != '['))
            fail(nullptr, "the script must be a JSON object (or an array of responses)");
        ScriptData data;
        data.source = source_;
        od::parser parser;
        try {
            od::document doc = parser.iterate(buf_);
            od::value root = doc.get_value();
            const char* at = where(root);
            od::json_type t = root.type();
            if (t == od::json_type::array) {  // shorthand: just the ordered responses
                parse_responses(root, data, "responses");
            } else if (t == od::json_type::object) {
                parse_root(root.get_object(), data);
            } else {
                fail(at, "the script must be a JSON object (or an array of responses)");
            }
        } catch (const simdjson::simdjson_error& e) {
            fail(nullptr, std::string("cannot read the script: ") + e.what());
        }
        if (data.rules.empty() && data.responses.empty()) fail(nullptr, "the script has neither \"rules\" nor \"responses\"");
        return data;
    }

private:
    [[noreturn]] void fail(const char* at, std::string what) { throw ScriptError(source_, line_of(at), std::move(what)); }

    std::size_t line_of(const char* at) const {
        if (!at) return 1;
        auto off = static_cast<std::size_t>(at - buf_.data());
        off = std::min(off, text_.size());
        return 1 + static_cast<std::size_t>(std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(off), '\n'));
    }

    static const char* where(od::value& v) {
        return v.raw_json_token().data();
    }

    // simdjson says whether the document is valid; Boost.JSON's incremental parser
    // says how far it got, which gives the line of a syntax error.
    void check_syntax() {
        simdjson::dom::parser dom;
        auto err = dom.parse(buf_).error();
        if (!err) return;
        boost::json::stream_parser sp;
        boost::system::error_code ec;
        std::size_t n = sp.write_some(text_.data(), text_.size(), ec);
        if (!ec) {
            sp.finish(ec);
            n = text_.size();
        }
        const char* at = buf_.data() + std::min(n, text_.size());
        fail(at, std::string("invalid JSON: ") + simdjson::error_message(err));
    }

    std::string_view get_string(od::value& v, const std::string& path) {
        const char* at = where(v);
        if (v.type() != od::json_type::string) fail(at, path + " must be a string");
        return v.get_string();
    }

    std::uint64_t get_uint(od::value& v, const std::string& path, std::uint64_t max = UINT64_MAX) {
        const char* at = where(v);
        std::uint64_t n = 0;
        if (v.type() != od::json_type::number || v.get_uint64().get(n) || n > max)
            fail(at, path + " must be a non-negative integer" + (max != UINT64_MAX ? " up to " + std::to_string(max) : ""));
        return n;
    }

    void parse_root(od::object obj, ScriptData& data) {
        for (auto field : obj) {
            std::string_view key = field.unescaped_key();
            od::value v = field.value();
            const char* at = where(v);
            if (key == "rules") {
                if (v.type() != od::json_type::array) fail(at, "\"rules\" must be an array");
                std::size_t i = 0;
                for (od::value r : v.get_array()) parse_rule(r, data, "rules[" + std::to_string(i++) + "]");
            } else if (key == "responses") {
                parse_responses(v, data, "responses");
            } else if (key == "when_exhausted") {
                std::string_view s = get_string(v, "\"when_exhausted\"");
                if (s == "error") data.when_exhausted = Exhausted::error;
                else if (s == "repeat_last") data.when_exhausted = Exhausted::repeat_last;
                else if (s == "cycle") data.when_exhausted = Exhausted::cycle;
                else if (s == "fanout") data.when_exhausted = Exhausted::fanout;
                else fail(at, "\"when_exhausted\" must be one of error, repeat_last, cycle, fanout (got \"" + std::string(s) + "\")");
            } else if (key == "models") {
                if (v.type() != od::json_type::array) fail(at, "\"models\" must be an array of strings");
                std::size_t i = 0;
                for (od::value m : v.get_array())
                    data.models.emplace_back(get_string(m, "models[" + std::to_string(i++) + "]"));
            } else if (key == "description" || key == "$comment") {
                // free text for humans
            } else {
                fail(at, "unknown top-level key \"" + std::string(key) +
                             "\" (expected rules, responses, when_exhausted, models, description)");
            }
        }
    }

    void parse_responses(od::value& v, ScriptData& data, const std::string& path) {
        if (v.type() != od::json_type::array) fail(where(v), "\"" + path + "\" must be an array");
        std::size_t i = 0;
        for (od::value r : v.get_array()) data.responses.push_back(parse_respond(r, path + "[" + std::to_string(i++) + "]"));
    }

    void parse_rule(od::value& v, ScriptData& data, const std::string& path) {
        const char* at = where(v);
        if (v.type() != od::json_type::object) fail(at, path + " must be an object with \"match\" and \"respond\"");
        Rule rule;
        rule.line = line_of(at);
        bool has_respond = false;
        for (auto field : v.get_object()) {
            std::string_view key = field.unescaped_key();
            od::value fv = field.value();
            const char* fat = where(fv);
            if (key == "match") {
                rule.match = parse_match(fv, path + ".match");
            } else if (key == "respond") {
                rule.respond = parse_respond(fv, path + ".respond");
                has_respond = true;
            } else if (key == "times") {
                rule.times = get_uint(fv, path + ".times");
            } else if (key == "description" || key == "$comment") {
            } else {
                fail(fat, path + ": unknown key \"" + std::string(key) + "\" (expected match, respond, times)");
            }
        }
        if (!has_respond) fail(at, path + " has no \"respond\"");
        data.rules.push_back(std::move(rule));
    }

    Match parse_match(od::value& v, const std::string& path) {
        const char* at = where(v);
        if (v.type() != od::json_type::object) fail(at, path + " must be an object");
        Match m;
        for (auto field : v.get_object()) {
            std::string_view key = field.unescaped_key();
            od::value fv = field.value();
            const char* fat = where(fv);
            std::string sub = path + "." + std::string(key);
            if (key == "role") {
                std::string_view r = get_string(fv, sub);
                if (r != "user" && r != "assistant" && r != "tool" && r != "system")
                    fail(fat, sub + " must be one of user, assistant, tool, system (got \"" + std::string(r) + "\")");
                m.role = std::string(r);
            } else if (key == "contains") {
                m.contains = std::string(get_string(fv, sub));
            } else if (key == "equals") {
                m.equals = std::string(get_string(fv, sub));
            } else if (key == "model") {
                m.model = std::string(get_string(fv, sub));
            } else if (key == "tool_call_id") {
                m.tool_call_id = std::string(get_string(fv, sub));
            } else if (key == "endpoint") {
                std::string_view e = get_string(fv, sub);
                if (e == "chat" || e == "openai") m.endpoint = Api::openai;
                else if (e == "messages" || e == "anthropic") m.endpoint = Api::anthropic;
                else fail(fat, sub + " must be \"chat\" or \"messages\" (got \"" + std::string(e) + "\")");
            } else {
                fail(fat, path + ": unknown key \"" + std::string(key) + "\" (expected one of " + std::string(match_keys) + ")");
            }
        }
        return m;
    }

    static std::string_view finish_from(std::string_view s) {
        if (s == "stop" || s == "end_turn" || s == "stop_sequence") return "stop";
        if (s == "tool_calls" || s == "tool_use") return "tool_calls";
        if (s == "length" || s == "max_tokens") return "length";
        if (s == "content_filter" || s == "refusal") return "content_filter";
        return {};
    }

    Respond parse_respond(od::value& v, const std::string& path) {
        const char* at = where(v);
        if (v.type() != od::json_type::object) fail(at, path + " must be an object");
        Respond r;
        r.line = line_of(at);
        for (auto field : v.get_object()) {
            std::string_view key = field.unescaped_key();
            od::value fv = field.value();
            const char* fat = where(fv);
            std::string sub = path + "." + std::string(key);
            if (key == "text") {
                r.text = std::string(get_string(fv, sub));
            } else if (key == "tool_calls") {
                if (fv.type() != od::json_type::array) fail(fat, sub + " must be an array");
                std::size_t i = 0;
                for (od::value c : fv.get_array()) r.tool_calls.push_back(parse_tool_call(c, sub + "[" + std::to_string(i++) + "]"));
            } else if (key == "finish_reason" || key == "stop_reason") {
                std::string_view f = get_string(fv, sub);
                r.finish = finish_from(f);
                if (r.finish.empty())
                    fail(fat, sub + " must be one of stop, tool_calls, length, content_filter (or end_turn, tool_use, max_tokens, refusal); got \"" +
                                  std::string(f) + "\"");
            } else if (key == "usage") {
                parse_usage(fv, r, sub);
            } else if (key == "latency_ms") {
                r.latency = std::chrono::milliseconds(get_uint(fv, sub, 3'600'000));
            } else if (key == "token_delay_ms") {
                r.token_delay = std::chrono::milliseconds(get_uint(fv, sub, 60'000));
            } else if (key == "fault") {
                std::string_view f = get_string(fv, sub);
                auto parsed = parse_fault(f);
                if (!parsed) fail(fat, sub + ": unknown fault \"" + std::string(f) + "\" (expected one of " + std::string(fault_names) + ")");
                r.fault = *parsed;
            } else if (key == "retry_after") {
                r.retry_after = static_cast<std::uint32_t>(get_uint(fv, sub, 86'400));
            } else if (key == "message") {
                r.message = std::string(get_string(fv, sub));
            } else if (key == "chunks") {
                r.chunks = get_uint(fv, sub, 100'000);
                if (r.chunks == 0) fail(fat, sub + " must be at least 1");
            } else {
                fail(fat, path + ": unknown key \"" + std::string(key) + "\" (expected one of " + std::string(respond_keys) + ")");
            }
        }
        if (!r.text && r.tool_calls.empty() && r.fault == Fault::none)
            fail(at, path + " needs at least one of \"text\", \"tool_calls\" or \"fault\"");
        return r;
    }

    void parse_usage(od::value& v, Respond& r, const std::string& path) {
        if (v.type() != od::json_type::object) fail(where(v), path + " must be an object");
        for (auto field : v.get_object()) {
            std::string_view key = field.unescaped_key();
            od::value fv = field.value();
            const char* fat = where(fv);
            std::string sub = path + "." + std::string(key);
            if (key == "prompt_tokens" || key == "input_tokens")
                r.prompt_tokens = get_uint(fv, sub);
            else if (key == "completion_tokens" || key == "output_tokens")
                r.completion_tokens = get_uint(fv, sub);
            else if (key == "total_tokens") {
                get_uint(fv, sub);  // derived; accepted for convenience
            } else
                fail(fat, path + ": unknown key \"" + std::string(key) + "\" (expected prompt_tokens, completion_tokens)");
        }
    }

    ScriptToolCall parse_tool_call(od::value& v, const std::string& path) {
        const char* at = where(v);
        if (v.type() != od::json_type::object) fail(at, path + " must be an object with \"name\" and \"arguments\"");
        ScriptToolCall c;
        bool has_args = false;
        for (auto field : v.get_object()) {
            std::string_view key = field.unescaped_key();
            od::value fv = field.value();
            const char* fat = where(fv);
            std::string sub = path + "." + std::string(key);
            if (key == "name") {
                c.name = std::string(get_string(fv, sub));
                if (c.name.empty()) fail(fat, sub + " must not be empty");
            } else if (key == "id") {
                c.id = std::string(get_string(fv, sub));
            } else if (key == "arguments" || key == "input") {
                has_args = true;
                od::json_type t = fv.type();
                if (t == od::json_type::string) {
                    std::string_view sv = fv.get_string();
                    c.arguments = std::string(sv);  // verbatim, possibly invalid on purpose
                } else if (t == od::json_type::object) {
                    std::string_view raw = simdjson::to_json_string(fv);
                    c.arguments.resize(raw.size());
                    std::size_t len = 0;
                    if (simdjson::minify(raw.data(), raw.size(), c.arguments.data(), len))
                        fail(fat, sub + " is not valid JSON");
                    c.arguments.resize(len);
                } else {
                    fail(fat, sub + " must be an object (or a string of JSON text)");
                }
            } else {
                fail(fat, path + ": unknown key \"" + std::string(key) + "\" (expected name, arguments, id)");
            }
        }
        if (c.name.empty()) fail(at, path + " has no \"name\"");
        if (!has_args) c.arguments = "{}";
        return c;
    }

    std::string_view text_;
    simdjson::padded_string buf_;
    std::string source_;
};

// Replaces every "{{last}}" in `tmpl` with `value` (JSON-escaped, without quotes,
// when `json`), appending to `out`.
void substitute(std::string& out, std::string_view tmpl, std::string_view value, bool json) {
    static constexpr std::string_view marker = "{{last}}";
    std::size_t pos = 0;
    for (;;) {
        std::size_t hit = tmpl.find(marker, pos);
        out.append(tmpl.substr(pos, hit == std::string_view::npos ? std::string_view::npos : hit - pos));
        if (hit == std::string_view::npos) return;
        if (json) {
            std::size_t start = out.size();
            append_json_string(out, value);
            out.erase(start, 1);
            out.pop_back();
        } else {
            out.append(value);
        }
        pos = hit + marker.size();
    }
}

bool matches(const Match& m, const ChatRequest& req) {
    if (m.role && req.last_role != *m.role) return false;
    if (m.contains && req.last_text.find(*m.contains) == std::string::npos) return false;
    if (m.equals && req.last_text != *m.equals) return false;
    if (m.model && req.model != *m.model) return false;
    if (m.tool_call_id && req.last_tool_call_id != *m.tool_call_id) return false;
    if (m.endpoint && req.api != *m.endpoint) return false;
    return true;
}

}  // namespace

void apply_respond(const Respond& r, const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq) {
    if (r.text) {
        turn.has_text = true;
        substitute(turn.text, *r.text, req.last_text, false);
    }
    for (const auto& c : r.tool_calls) {
        auto& out = turn.add_call();
        if (c.id.empty())
            make_call_id(req.api, seq, out.id);
        else
            out.id = c.id;
        out.name = c.name;
        substitute(out.arguments, c.arguments, req.last_text, true);
    }
    if (!turn.has_text && turn.call_count == 0) turn.has_text = true;  // a fault-only response
    turn.finish = !r.finish.empty() ? r.finish : (turn.call_count ? std::string_view("tool_calls") : std::string_view("stop"));
    turn.prompt_tokens = r.prompt_tokens;
    turn.completion_tokens = r.completion_tokens;
    turn.latency = r.latency;
    turn.token_delay = r.token_delay;
    turn.fault = r.fault;
    if (r.retry_after) turn.retry_after = *r.retry_after;
    turn.fault_message = r.message;
    turn.chunks = r.chunks;
}

ScriptRunner::ScriptRunner(std::shared_ptr<const ScriptData> data) : data_(std::move(data)), fired_(data_->rules.size(), 0) {}

void ScriptRunner::reset() {
    std::lock_guard lk(mu_);
    cursor_ = 0;
    std::fill(fired_.begin(), fired_.end(), 0);
}

ScriptRunner::Outcome ScriptRunner::decide(const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq, std::string& error) {
    std::lock_guard lk(mu_);
    const auto& d = *data_;
    for (std::size_t i = 0; i < d.rules.size(); ++i) {
        const auto& rule = d.rules[i];
        if (rule.times && fired_[i] >= *rule.times) continue;
        if (!matches(rule.match, req)) continue;
        ++fired_[i];
        apply_respond(rule.respond, req, turn, seq);
        return Outcome::answered;
    }
    if (cursor_ < d.responses.size()) {
        apply_respond(d.responses[cursor_++], req, turn, seq);
        return Outcome::answered;
    }
    switch (d.when_exhausted) {
        case Exhausted::fanout:
            return Outcome::fallback;
        case Exhausted::repeat_last:
            if (!d.responses.empty()) {
                apply_respond(d.responses.back(), req, turn, seq);
                return Outcome::answered;
            }
            break;
        case Exhausted::cycle:
            if (!d.responses.empty()) {
                cursor_ = 0;
                apply_respond(d.responses[cursor_++], req, turn, seq);
                return Outcome::answered;
            }
            break;
        case Exhausted::error:
            break;
    }
    error = "fake_llm script " + d.source + ": no rule matched the last message (role \"" + req.last_role +
            "\") and all " + std::to_string(d.responses.size()) + " ordered responses were used";
    return Outcome::exhausted;
}

}  // namespace detail

Script Script::parse(std::string_view json, std::string_view source_name) {
    detail::Loader loader(json, std::string(source_name));
    return Script(std::make_shared<const detail::ScriptData>(loader.run()));
}

Script Script::load(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ScriptError(file.string(), 0, "cannot open the script file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw ScriptError(file.string(), 0, "cannot read the script file");
    return parse(ss.str(), file.string());
}

std::size_t Script::rule_count() const noexcept { return data_ ? data_->rules.size() : 0; }
std::size_t Script::response_count() const noexcept { return data_ ? data_->responses.size() : 0; }

}  // namespace rath::fake_llm
