#include "tools/rath-fake-llm/src/engine.hpp"

#include "net/base64.hpp"
#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/render.hpp"
#include "tools/rath-fake-llm/src/text.hpp"
#include "tools/rath-fake-llm/src/workload.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace rath::fake_llm::detail {

namespace {

constexpr std::string_view json_type = "application/json";

bool parse_number(std::string_view s, std::uint64_t& out, std::uint64_t max) {
    if (s.empty()) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && out <= max;
}

void bump_peak(std::atomic<std::uint64_t>& peak, std::uint64_t now) {
    std::uint64_t seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
}

std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// A deterministic bag-of-words embedding: every word adds +-1 at a hashed index,
// then the vector is L2-normalised. Texts sharing words get similar vectors.
void embed(std::string_view text, std::size_t dims, std::vector<float>& v) {
    v.assign(dims, 0.0f);
    std::string word;
    bool any = false;
    auto flush = [&] {
        if (word.empty()) return;
        std::uint64_t h = fnv1a(word);
        v[h % dims] += (h >> 63) ? -1.0f : 1.0f;
        any = true;
        word.clear();
    };
    for (unsigned char c : text) {
        if (std::isalnum(c) || c >= 0x80)
            word.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
        else
            flush();
    }
    flush();
    if (!any) v[fnv1a(text) % dims] = 1.0f;
    double norm = 0;
    for (float f : v) norm += double(f) * f;
    norm = std::sqrt(norm);
    if (norm == 0) {  // words cancelled each other out
        v[fnv1a(text) % dims] = 1.0f;
        norm = 1;
    }
    for (float& f : v) f = static_cast<float>(f / norm);
}

std::uint64_t unix_now() { return static_cast<std::uint64_t>(std::time(nullptr)); }

std::int64_t process_cpu_us() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1'000'000LL + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

}  // namespace

Engine::Engine(const ServerOptions& options)
    : options_(options), latency_ms_(options.latency.count()), cpu_base_us_(process_cpu_us()) {
    if (options_.mode == Mode::script) {
        std::shared_ptr<const ScriptData> data;
        if (options_.parsed_script)
            data = options_.parsed_script->data();
        else if (!options_.script.empty())
            data = Script::parse(options_.script).data();
        else if (!options_.script_path.empty())
            data = Script::load(options_.script_path).data();
        else
            throw ScriptError("<script>", 0, "script mode needs a script (script_path, script or parsed_script)");
        script_ = std::make_unique<ScriptRunner>(data);
        models_ = data->models;
    }
    if (std::find(models_.begin(), models_.end(), options_.model) == models_.end())
        models_.insert(models_.begin(), options_.model);
}

void Engine::handle(const RequestView& req, Exchange& ex) {
    auto& r = ex.reply;
    r.clear();
    std::string_view path = req.target.substr(0, req.target.find('?'));
    std::string_view query = path.size() < req.target.size() ? req.target.substr(path.size() + 1) : std::string_view();
    const bool post = req.method == "POST", get = req.method == "GET";

    if (post && (path == "/v1/chat/completions" || path == "/chat/completions")) return chat(req, Api::openai, ex);
    if (post && (path == "/v1/messages" || path == "/messages")) return chat(req, Api::anthropic, ex);
    if (post && (path == "/v1/embeddings" || path == "/embeddings")) return embeddings(req, ex);
    if (get && (path == "/v1/models" || path == "/models")) return models(req, {}, ex);
    if (get && path.starts_with("/v1/models/")) return models(req, path.substr(11), ex);
    if (get && path == "/health") {
        r.content_type = "text/plain";
        r.body = "ok";
        return;
    }
    if (get && path == "/stats") return stats_body(r);
    if (post && path == "/stats/reset") {
        reset_stats();
        return stats_body(r);
    }
    if (post && path == "/config") {
        // /config?latency_ms=N, as the peers' server
        std::uint64_t ms = 0;
        auto pos = query.find("latency_ms=");
        if (pos != std::string_view::npos) {
            auto v = query.substr(pos + 11);
            v = v.substr(0, v.find('&'));
            if (parse_number(v, ms, 3'600'000)) set_latency(std::chrono::milliseconds(ms));
        }
        r.content_type = json_type;
        r.body = "{\"latency_ms\":";
        append_uint(r.body, static_cast<std::uint64_t>(latency_ms_.load(std::memory_order_relaxed)));
        r.body += '}';
        return;
    }
    // The error body OpenAI sends for an unknown URL.
    std::string msg = "Invalid URL (";
    msg += req.method;
    msg += ' ';
    msg += path;
    msg += ')';
    render_error(Api::openai, 404, "invalid_request_error", msg, r);
    r.not_found = true;
}

bool Engine::apply_overrides(const RequestView& req, Api api, Exchange& ex) {
    auto& t = ex.turn;
    auto bad = [&](std::string msg) {
        render_error(api, 400, "invalid_request_error", msg, ex.reply);
        ex.reply.client_error = true;
        return false;
    };
    if (!req.fault.empty()) {
        auto f = parse_fault(req.fault);
        if (!f) return bad("x-fake-fault: unknown fault \"" + std::string(req.fault) + "\" (expected one of " + std::string(fault_names) + ")");
        t.fault = *f;
    }
    std::uint64_t n = 0;
    if (!req.retry_after.empty()) {
        if (!parse_number(req.retry_after, n, 86'400)) return bad("x-fake-retry-after must be a number of seconds");
        t.retry_after = static_cast<std::uint32_t>(n);
    }
    if (!req.latency_ms.empty()) {
        if (!parse_number(req.latency_ms, n, 3'600'000)) return bad("x-fake-latency-ms must be a number of milliseconds");
        t.latency = std::chrono::milliseconds(n);
    }
    if (!req.token_delay_ms.empty()) {
        if (!parse_number(req.token_delay_ms, n, 60'000)) return bad("x-fake-token-delay-ms must be a number of milliseconds");
        t.token_delay = std::chrono::milliseconds(n);
    }
    return true;
}

void Engine::chat(const RequestView& req, Api api, Exchange& ex) {
    auto& r = ex.reply;
    auto& turn = ex.turn;
    if (!parse_chat_request(*req.body, api, ex.chat, ex.error)) {
        render_error(api, 400, "invalid_request_error", ex.error, r);
        r.client_error = true;
        return;
    }
    turn.clear();
    bool answered = true;
    switch (options_.mode) {
        case Mode::fanout:
            fanout_turn(ex.chat, turn, seq_);
            break;
        case Mode::echo:
            echo_turn(ex.chat, turn);
            break;
        case Mode::script:
            switch (script_->decide(ex.chat, turn, seq_, ex.error)) {
                case ScriptRunner::Outcome::answered: break;
                case ScriptRunner::Outcome::fallback: fanout_turn(ex.chat, turn, seq_); break;
                case ScriptRunner::Outcome::exhausted: answered = false; break;
            }
            break;
    }
    // Headers override the script, which overrides the server's defaults.
    auto script_latency = turn.latency, script_delay = turn.token_delay;
    turn.latency.reset();
    turn.token_delay.reset();
    if (!apply_overrides(req, api, ex)) return;
    std::uint64_t now = c_.in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
    bump_peak(c_.in_flight_peak, now);
    if (!answered) {
        render_error(api, 500, api == Api::anthropic ? "api_error" : "server_error", ex.error, r);
        r.llm = true;
        return;
    }
    if (turn.fault == Fault::bad_tool_json)
        for (std::size_t i = 0; i < turn.call_count; ++i) break_json(turn.calls[i].arguments);
    RenderContext ctx;
    ctx.model = ex.chat.model.empty() ? std::string_view(options_.model) : std::string_view(ex.chat.model);
    ctx.created = unix_now();
    ctx.id_number = seq_.fetch_add(1, std::memory_order_relaxed) + 1;
    ctx.pieces = &ex.pieces;
    render_chat(ex.chat, turn, ctx, r);
    using ms = std::chrono::milliseconds;
    r.latency = turn.latency ? *turn.latency : script_latency ? *script_latency : ms(latency_ms_.load(std::memory_order_relaxed));
    r.token_delay = turn.token_delay ? *turn.token_delay : script_delay ? *script_delay : options_.token_delay;
}

void Engine::embeddings(const RequestView& req, Exchange& ex) {
    auto& r = ex.reply;
    r.embedding = true;
    if (!parse_embedding_request(*req.body, ex.embedding, ex.error)) {
        render_error(Api::openai, 400, "invalid_request_error", ex.error, r);
        r.client_error = true;
        return;
    }
    auto& turn = ex.turn;
    turn.clear();
    if (!apply_overrides(req, Api::openai, ex)) return;
    r.latency = turn.latency.value_or(std::chrono::milliseconds(latency_ms_.load(std::memory_order_relaxed)));
    switch (turn.fault) {
        case Fault::rate_limit:
            r.extra_headers += "retry-after: ";
            append_uint(r.extra_headers, turn.retry_after);
            r.extra_headers += "\r\n";
            render_error(Api::openai, 429, "requests", "Rate limit reached for requests. Please try again later.", r, "rate_limit_exceeded");
            r.fault = true;
            return;
        case Fault::server_error:
        case Fault::stream_error:
            render_error(Api::openai, 500, "server_error", "The server had an error while processing your request. Sorry about that!", r);
            r.fault = true;
            return;
        case Fault::overloaded:
            render_error(Api::openai, 529, "overloaded_error", "Overloaded", r);
            r.fault = true;
            return;
        default:
            break;
    }
    const auto& e = ex.embedding;
    std::size_t dims = options_.forced_embedding_dimensions ? options_.forced_embedding_dimensions
                       : e.dimensions                         ? e.dimensions
                                                              : options_.embedding_dimensions;
    std::uint64_t tokens = 0;
    auto& b = r.body;
    r.content_type = json_type;
    b += "{\"object\":\"list\",\"data\":[";
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
        tokens += count_words(e.inputs[i]);
        embed(e.inputs[i], dims, ex.vector);
        if (i) b += ',';
        b += "{\"object\":\"embedding\",\"index\":";
        append_uint(b, i);
        b += ",\"embedding\":";
        if (e.base64) {
            // little-endian float32, as the real service encodes it
            b += '"';
            std::vector<unsigned char> raw(dims * 4);
            for (std::size_t k = 0; k < dims; ++k) {
                std::uint32_t bits;
                std::memcpy(&bits, &ex.vector[k], 4);
                for (int j = 0; j < 4; ++j) raw[k * 4 + j] = static_cast<unsigned char>(bits >> (8 * j));
            }
            b += rath::net::detail::base64_encode(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()));
            b += '"';
        } else {
            b += '[';
            char buf[32];
            for (std::size_t k = 0; k < dims; ++k) {
                if (k) b += ',';
                auto res = std::to_chars(buf, buf + sizeof buf, ex.vector[k]);
                b.append(buf, res.ptr);
            }
            b += ']';
        }
        b += '}';
    }
    b += "],\"model\":";
    append_json_string(b, e.model.empty() ? std::string_view("text-embedding-3-small") : std::string_view(e.model));
    b += ",\"usage\":{\"prompt_tokens\":";
    append_uint(b, tokens);
    b += ",\"total_tokens\":";
    append_uint(b, tokens);
    b += "}}";
    if (turn.fault == Fault::truncate) {
        b.resize(b.size() / 2);
        r.fault = true;
    } else if (turn.fault == Fault::reset) {
        r.reset = r.close = r.fault = true;
        r.reset_after = b.size() / 2;
    }
}

void Engine::models(const RequestView& req, std::string_view id, Exchange& ex) {
    auto& r = ex.reply;
    auto& b = r.body;
    r.content_type = json_type;
    constexpr std::uint64_t created = 1700000000;  // fixed: models do not age
    auto openai_model = [&](std::string_view m) {
        b += "{\"id\":";
        append_json_string(b, m);
        b += ",\"object\":\"model\",\"created\":";
        append_uint(b, created);
        b += ",\"owned_by\":\"rath\"}";
    };
    auto anthropic_model = [&](std::string_view m) {
        b += "{\"type\":\"model\",\"id\":";
        append_json_string(b, m);
        b += ",\"display_name\":";
        append_json_string(b, m);
        b += ",\"created_at\":\"2023-11-14T22:13:20Z\"}";
    };
    if (!id.empty()) {
        if (std::find(models_.begin(), models_.end(), id) == models_.end()) {
            std::string msg = "The model `" + std::string(id) + "` does not exist or you do not have access to it.";
            if (req.anthropic_version)
                render_error(Api::anthropic, 404, "not_found_error", "model: " + std::string(id), r);
            else
                render_error(Api::openai, 404, "invalid_request_error", msg, r, "model_not_found");
            r.not_found = true;
            return;
        }
        req.anthropic_version ? anthropic_model(id) : openai_model(id);
        return;
    }
    if (req.anthropic_version) {
        b += "{\"data\":[";
        for (std::size_t i = 0; i < models_.size(); ++i) {
            if (i) b += ',';
            anthropic_model(models_[i]);
        }
        b += "],\"has_more\":false,\"first_id\":";
        append_json_string(b, models_.front());
        b += ",\"last_id\":";
        append_json_string(b, models_.back());
        b += '}';
    } else {
        b += "{\"object\":\"list\",\"data\":[";
        for (std::size_t i = 0; i < models_.size(); ++i) {
            if (i) b += ',';
            openai_model(models_[i]);
        }
        b += "]}";
    }
}

void Engine::responding(const Reply& r) {
    constexpr auto rel = std::memory_order_relaxed;
    if (r.llm) {
        c_.in_flight.fetch_sub(1, rel);
        c_.requests.fetch_add(1, rel);
        if (r.kind == Reply::Kind::tool_call) c_.tool_call_replies.fetch_add(1, rel);
        if (r.kind == Reply::Kind::final_text) c_.final_replies.fetch_add(1, rel);
        if (r.sse) c_.streamed.fetch_add(1, rel);
    }
    if (r.fault) c_.faults.fetch_add(1, rel);
    if (r.client_error) c_.errors.fetch_add(1, rel);
    if (r.not_found) c_.not_found.fetch_add(1, rel);
    if (r.embedding && r.status == 200) c_.embeddings.fetch_add(1, rel);
}

void Engine::aborted() { c_.aborted.fetch_add(1, std::memory_order_relaxed); }

void Engine::connection_opened() {
    c_.connections_total.fetch_add(1, std::memory_order_relaxed);
    bump_peak(c_.connections_peak, c_.connections.fetch_add(1, std::memory_order_relaxed) + 1);
}

void Engine::connection_closed() { c_.connections.fetch_sub(1, std::memory_order_relaxed); }

ServerStats Engine::stats() const {
    constexpr auto rel = std::memory_order_relaxed;
    ServerStats s;
    s.requests = c_.requests.load(rel);
    s.tool_call_replies = c_.tool_call_replies.load(rel);
    s.final_replies = c_.final_replies.load(rel);
    s.streamed = c_.streamed.load(rel);
    s.faults = c_.faults.load(rel);
    s.errors = c_.errors.load(rel);
    s.aborted = c_.aborted.load(rel);
    s.not_found = c_.not_found.load(rel);
    s.embeddings = c_.embeddings.load(rel);
    s.in_flight = c_.in_flight.load(rel);
    s.in_flight_peak = c_.in_flight_peak.load(rel);
    s.connections = c_.connections.load(rel);
    s.connections_peak = c_.connections_peak.load(rel);
    s.connections_total = c_.connections_total.load(rel);
    return s;
}

void Engine::reset_stats() {
    constexpr auto rel = std::memory_order_relaxed;
    for (auto* a : {&c_.requests, &c_.tool_call_replies, &c_.final_replies, &c_.streamed, &c_.faults, &c_.errors,
                    &c_.aborted, &c_.not_found, &c_.embeddings, &c_.connections_total})
        a->store(0, rel);
    c_.connections_peak.store(c_.connections.load(rel), rel);
    c_.in_flight_peak.store(c_.in_flight.load(rel), rel);
    cpu_base_us_.store(process_cpu_us(), rel);
    if (script_) script_->reset();
}

void Engine::stats_body(Reply& r) const {
    auto s = stats();
    auto& b = r.body;
    r.content_type = json_type;
    auto field = [&](std::string_view name, std::uint64_t v) {
        b += b.empty() ? "{\"" : ",\"";
        b += name;
        b += "\":";
        append_uint(b, v);
    };
    field("requests", s.requests);
    field("tool_call_replies", s.tool_call_replies);
    field("final_replies", s.final_replies);
    field("streamed", s.streamed);
    field("errors", s.errors);
    field("aborted", s.aborted);
    field("not_found", s.not_found);
    field("faults", s.faults);
    field("embeddings", s.embeddings);
    field("in_flight", s.in_flight);
    field("in_flight_peak", s.in_flight_peak);
    field("connections", s.connections);
    field("connections_peak", s.connections_peak);
    field("connections_total", s.connections_total);
    field("latency_ms", static_cast<std::uint64_t>(latency_ms_.load(std::memory_order_relaxed)));
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double cpu = double(process_cpu_us() - cpu_base_us_.load(std::memory_order_relaxed)) / 1e6;
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, cpu);
    b += ",\"cpu_s\":";
    b.append(buf, res.ptr);
    // Current RSS from procfs (a memory read, not disk I/O).
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    b += ",\"rss_mb\":";
    append_uint(b, static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 1048576);
    b += ",\"peak_rss_mb\":";
    append_uint(b, static_cast<std::uint64_t>(ru.ru_maxrss) / 1024);
    b += '}';
}

}  // namespace rath::fake_llm::detail
