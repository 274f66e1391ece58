// Deterministic replay (loop/replay.hpp): the recorded run's loop again, against a chat
// client that serves the recording and checks every request on the way.
#include <rath/loop/replay.hpp>

#include <rath/async/this_thread.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/recording.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/serialize.hpp>
#include <rath/tool/tool_set.hpp>

#include "lib/text/json_parse.hpp"

#include <boost/json/serialize.hpp>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rath {

namespace json = boost::json;
namespace fs = std::filesystem;

// ---- JSON differences ----

namespace {

std::string key_path(const std::string& base, std::string_view key) {
    return base.empty() ? std::string(key) : base + "." + std::string(key);
}

bool same_scalar(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_double() || b.is_double()) return a.to_number<double>() == b.to_number<double>();
        return a == b || (a.is_int64() && b.is_uint64() && a.get_int64() >= 0 &&
                          static_cast<std::uint64_t>(a.get_int64()) == b.get_uint64()) ||
               (a.is_uint64() && b.is_int64() && b.get_int64() >= 0 &&
                a.get_uint64() == static_cast<std::uint64_t>(b.get_int64()));
    }
    return a == b;
}

void diff_into(const json::value& a, const json::value& b, const std::string& path, std::size_t limit,
               std::vector<JsonDifference>& out) {
    if (out.size() >= limit) return;
    if (a.is_object() && b.is_object()) {
        const auto& ao = a.get_object();
        const auto& bo = b.get_object();
        for (const auto& kv : ao) {
            auto it = bo.find(kv.key());
            if (it == bo.end())
                out.push_back({key_path(path, kv.key()), kv.value(), std::nullopt});
            else
                diff_into(kv.value(), it->value(), key_path(path, kv.key()), limit, out);
            if (out.size() >= limit) return;
        }
        for (const auto& kv : bo) {
            if (ao.contains(kv.key())) continue;
            out.push_back({key_path(path, kv.key()), std::nullopt, kv.value()});
            if (out.size() >= limit) return;
        }
        return;
    }
    if (a.is_array() && b.is_array()) {
        const auto& aa = a.get_array();
        const auto& ba = b.get_array();
        for (std::size_t i = 0; i < std::max(aa.size(), ba.size()) && out.size() < limit; ++i) {
            const std::string p = path + "[" + std::to_string(i) + "]";
            if (i >= aa.size())
                out.push_back({p, std::nullopt, ba[i]});
            else if (i >= ba.size())
                out.push_back({p, aa[i], std::nullopt});
            else
                diff_into(aa[i], ba[i], p, limit, out);
        }
        return;
    }
    if (!same_scalar(a, b)) out.push_back({path, a, b});
}

// Widens [from, to) of `s` to whole UTF-8 sequences.
std::string utf8_window(const std::string& s, std::size_t from, std::size_t to) {
    auto continuation = [&](std::size_t i) { return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
    while (from > 0 && continuation(from)) --from;
    while (to < s.size() && continuation(to)) ++to;
    return s.substr(from, to - from);
}

std::string render_value(const std::optional<json::value>& v) {
    if (!v) return "(absent)";
    std::string text = json::serialize(*v);
    constexpr std::size_t cap = 400;
    if (text.size() > cap) text = utf8_window(text, 0, cap) + "... (" + std::to_string(text.size()) + " bytes)";
    return text;
}

}  // namespace

std::vector<JsonDifference> json_differences(const json::value& recorded, const json::value& replayed,
                                             std::size_t limit) {
    std::vector<JsonDifference> out;
    if (limit == 0) return out;
    diff_into(recorded, replayed, "", limit, out);
    return out;
}

std::string format_differences(const std::vector<JsonDifference>& diffs) {
    std::ostringstream os;
    for (const auto& d : diffs) {
        os << "  at " << (d.path.empty() ? "(the whole value)" : d.path) << ":\n";
        if (d.recorded && d.replayed && d.recorded->is_string() && d.replayed->is_string()) {
            const std::string a(d.recorded->get_string());
            const std::string b(d.replayed->get_string());
            std::size_t at = 0;
            while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
            const std::size_t from = at > 40 ? at - 40 : 0;
            os << "    strings differ from character " << at << " on (recorded " << a.size() << " bytes, replayed "
               << b.size() << " bytes):\n";
            os << "    - recorded: " << (from ? "..." : "")
               << json::serialize(json::value(utf8_window(a, from, std::min(a.size(), at + 80))))
               << (at + 80 < a.size() ? "..." : "") << "\n";
            os << "    + replayed: " << (from ? "..." : "")
               << json::serialize(json::value(utf8_window(b, from, std::min(b.size(), at + 80))))
               << (at + 80 < b.size() ? "..." : "") << "\n";
            continue;
        }
        os << "    - recorded: " << render_value(d.recorded) << "\n";
        os << "    + replayed: " << render_value(d.replayed) << "\n";
    }
    return os.str();
}

std::string_view to_string(DivergenceKind k) noexcept {
    switch (k) {
        case DivergenceKind::request: return "request";
        case DivergenceKind::tool_result: return "tool_result";
        case DivergenceKind::extra_call: return "extra_call";
        case DivergenceKind::missing_call: return "missing_call";
        case DivergenceKind::transcript: return "transcript";
        case DivergenceKind::failed: return "failed";
    }
    return "unknown";
}

// ---- the replay ----

namespace {

// Thrown into the replayed loop at the first divergence: it stops the run there.
class ReplayStopped : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The arguments of a tool call as a lookup key: the JSON text of the parsed object
// (whitespace and escapes normalised), else the text itself.
std::string arguments_key(std::string_view name, std::string_view arguments) {
    std::string key(name);
    key += '\n';
    if (auto v = rath::detail::parse_json(arguments); v && v->is_object())
        key += json::serialize(*v);
    else
        key += arguments;
    return key;
}

// The recorded results of the run's tool calls, by call (name and arguments), in order.
class RecordedResults {
public:
    void add(std::string key, std::string content) {
        std::lock_guard lk(mu_);
        results_[std::move(key)].push_back(std::move(content));
    }
    std::string next(const std::string& name, const json::object& arguments) {
        std::lock_guard lk(mu_);
        auto it = results_.find(name + "\n" + json::serialize(arguments));
        if (it == results_.end() || it->second.empty())
            throw ReplayError("the recording has no result for this call of '" + name + "' with arguments " +
                              json::serialize(arguments));
        std::string r = std::move(it->second.front());
        it->second.pop_front();
        return r;
    }

private:
    std::mutex mu_;
    std::map<std::string, std::deque<std::string>> results_;
};

// A tool of the program's own in the replay's tool table: the replay cannot run its
// C++ body, so the executor answers its calls from the recording instead.
class RecordedTool final : public tool::FlowToolCall {
public:
    using FlowToolCall::FlowToolCall;
    boost::asio::awaitable<tool::ToolReturn> async_call(Session, json::object) override {
        throw std::logic_error("a recorded tool is answered by the replay executor, never called");
    }
};

struct ReplayState {
    llm::Recording recording;
    const persistence::PersistedSession* original = nullptr;
    std::size_t agent_rows = 0;
    RecordedResults results;
    // The built-ins run again on a local sandbox (or none); a remote one is gone by now.
    bool rerun_builtins = true;

    std::mutex mu;
    std::size_t calls_made = 0;
    std::optional<ReplayDivergence> divergence;
    std::set<std::string> rerun, recorded_tools;

    void diverge(ReplayDivergence d) {
        std::lock_guard lk(mu);
        if (!divergence) divergence = std::move(d);
    }
};

std::optional<std::size_t> message_index(const std::string& path) {
    if (path.rfind("messages[", 0) != 0) return std::nullopt;
    const std::size_t close = path.find(']');
    if (close == std::string::npos) return std::nullopt;
    return static_cast<std::size_t>(std::strtoull(path.c_str() + 9, nullptr, 10));
}

// Names the first difference of request `call`: a tool message is a tool result that
// came out differently, anything else the request itself.
ReplayDivergence classify(const ReplayState& st, std::size_t call, const json::object& recorded,
                          std::vector<JsonDifference> diffs) {
    ReplayDivergence d;
    d.call = call;
    d.kind = DivergenceKind::request;
    d.summary = "request " + std::to_string(call) + " differs from the recorded one";
    if (auto m = message_index(diffs.front().path)) {
        const json::array* msgs = nullptr;
        if (auto it = recorded.find("messages"); it != recorded.end() && it->value().is_array())
            msgs = &it->value().get_array();
        if (*m >= st.agent_rows) d.row = *m - st.agent_rows;
        if (msgs && *m < msgs->size() && msgs->at(*m).is_object()) {
            const auto& msg = msgs->at(*m).get_object();
            auto role = msg.find("role");
            if (role != msg.end() && role->value() == "tool") {
                d.kind = DivergenceKind::tool_result;
                std::string call_id, name;
                if (auto id = msg.find("tool_call_id"); id != msg.end() && id->value().is_string())
                    call_id = id->value().get_string();
                if (d.row && *d.row < st.original->chunks.size()) {
                    const auto& p = st.original->chunks[*d.row]->payload();
                    if (auto n = p.find("name"); n != p.end() && n->value().is_string()) name = n->value().get_string();
                }
                d.summary = "the result of tool call " + call_id + (name.empty() ? "" : " (" + name + ")") +
                            " differs from the recording (seen in request " + std::to_string(call) + ")";
            }
        }
    }
    d.differences = std::move(diffs);
    return d;
}

class ReplayChatClient final : public llm::ChatClient {
public:
    ReplayChatClient(std::shared_ptr<ReplayState> st, llm::Provider provider, async::Runtime* rt)
        : ChatClient(rt), st_(std::move(st)), provider_(std::move(provider)) {}

    const llm::Provider& provider() const noexcept override { return provider_; }
    std::string_view kind() const noexcept override { return "replay"; }

private:
    boost::asio::awaitable<void> do_complete(const llm::ChatRequest& request, llm::ChatResponse& out,
                                             const llm::DeltaCallback*) override {
        const auto& calls = st_->recording.calls;
        std::size_t index;
        {
            std::lock_guard lk(st_->mu);
            index = st_->calls_made++;
        }
        if (index >= calls.size()) {
            ReplayDivergence d;
            d.kind = DivergenceKind::extra_call;
            d.call = index;
            d.summary = "the replay makes model call " + std::to_string(index) + " but only " +
                        std::to_string(calls.size()) + " were recorded";
            st_->diverge(std::move(d));
            throw ReplayStopped("extra call");
        }
        const llm::RecordedCall& rec = calls[index];
        const std::string model = request.model ? *request.model : provider_.model.value_or(rec.model);
        const json::object body = llm::request_to_json(request, model);
        auto diffs = json_differences(rec.request, body);
        if (!diffs.empty()) {
            st_->diverge(classify(*st_, index, rec.request, std::move(diffs)));
            throw ReplayStopped("request differs");
        }
        out = llm::response_from_json(rec.response);
        co_return;
    }

    std::shared_ptr<ReplayState> st_;
    llm::Provider provider_;
};

boost::asio::awaitable<std::string> ready(std::string s) { co_return s; }

boost::asio::awaitable<std::string> content_of(boost::asio::awaitable<tool::ToolDispatchResult> dispatch) {
    auto r = co_await std::move(dispatch);
    co_return std::move(r.content);
}

class ReplayExecutor final : public LoopExecutor {
public:
    ReplayExecutor(std::shared_ptr<ReplayState> st, std::shared_ptr<ReplayChatClient> client)
        : st_(std::move(st)), client_(std::move(client)) {}

    std::vector<llm::FunctionTool> tool_schemas() const override { return st_->recording.config.tools; }

private:
    boost::asio::awaitable<void> do_complete(const llm::ChatRequest& request, llm::ChatResponse& out) override {
        return client_->async_complete(request, out);
    }
    boost::asio::awaitable<std::string> do_dispatch_tool(Session out, tool::FlowToolPtr tool,
                                                         json::object arguments) override {
        if (dynamic_cast<RecordedTool*>(tool.get()) || !st_->rerun_builtins) {
            {
                std::lock_guard lk(st_->mu);
                st_->recorded_tools.insert(tool->name());
            }
            return ready(st_->results.next(tool->name(), arguments));
        }
        {
            std::lock_guard lk(st_->mu);
            st_->rerun.insert(tool->name());
        }
        // The built-in runs again, through the dispatcher, as in the recorded run.
        return content_of(
            tool::async_dispatch_flow_tool(std::move(out), std::move(tool), std::move(arguments), async::current_runtime()));
    }

    std::shared_ptr<ReplayState> st_;
    std::shared_ptr<ReplayChatClient> client_;
};

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ReplayError("cannot read " + p.string());
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t from = 0;
    while (from < text.size()) {
        std::size_t nl = text.find('\n', from);
        if (nl == std::string::npos) nl = text.size();
        out.push_back(text.substr(from, nl - from));
        from = nl + 1;
    }
    return out;
}

// The user tools of the recording; the recorded result of every tool call goes to
// `results`.
tool::ToolSet recorded_tools(const llm::RecordingConfig& config, const persistence::PersistedSession& original,
                             RecordedResults& results) {
    std::vector<tool::FlowToolPtr> tools;
    for (const auto& name : config.user_tools) {
        const llm::FunctionTool* schema = nullptr;
        for (const auto& t : config.tools)
            if (t.name == name) schema = &t;
        auto t = std::make_shared<RecordedTool>(name, schema ? schema->description : std::nullopt,
                                                schema ? schema->parameters : json::object{});
        tools.push_back(std::move(t));
    }
    // Each call's key (name and arguments) from the assistant row that made it, and its
    // result from the tool-result row that answers it.
    std::map<std::string, std::string> call_keys;
    for (std::size_t i = config.seed_rows; i < original.chunks.size(); ++i) {
        const ChunkRow& row = *original.chunks[i];
        const auto& p = row.payload();
        if (row.kind() == ChunkKind::assistant) {
            auto tc = p.find("tool_calls");
            if (tc == p.end() || !tc->value().is_array()) continue;
            for (const auto& c : tc->value().get_array()) {
                if (!c.is_object()) continue;
                const auto& co = c.get_object();
                auto id = co.find("id");
                auto fn = co.find("function");
                if (id == co.end() || !id->value().is_string() || fn == co.end() || !fn->value().is_object()) continue;
                const auto& f = fn->value().get_object();
                auto name = f.find("name");
                auto args = f.find("arguments");
                if (name == f.end() || !name->value().is_string()) continue;
                const std::string_view a = args != f.end() && args->value().is_string()
                                               ? std::string_view(args->value().get_string())
                                               : std::string_view();
                call_keys[std::string(id->value().get_string())] = arguments_key(name->value().get_string(), a);
            }
        } else if (row.kind() == ChunkKind::tool_result) {
            auto id = p.find("tool_call_id");
            auto name = p.find("name");
            auto content = p.find("content");
            if (id == p.end() || !id->value().is_string() || name == p.end() || !name->value().is_string()) continue;
            auto key = call_keys.find(std::string(id->value().get_string()));
            if (key == call_keys.end()) continue;
            results.add(key->second, content != p.end() && content->value().is_string()
                                         ? std::string(content->value().get_string())
                                         : std::string());
        }
    }
    return tool::ToolSet(std::move(tools));
}

// Compares the replayed transcript with the original (`a`: its records) record by record, byte for byte
// (the replay ran with the original's id, parents and times, so the header and trailer
// are the same bytes too when the run is).
std::optional<ReplayDivergence> compare_transcripts(const std::vector<std::string>& a, const fs::path& replayed,
                                                    std::size_t calls) {
    const auto b = split_lines(read_text(replayed));
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        ReplayDivergence d;
        d.kind = DivergenceKind::transcript;
        d.call = calls;
        if (i >= a.size() || i >= b.size()) {
            d.summary = "the replayed transcript has " + std::to_string(b.size()) + " records, the original " +
                        std::to_string(a.size());
            return d;
        }
        if (a[i] == b[i]) continue;
        auto va = rath::detail::parse_json(a[i]);
        auto vb = rath::detail::parse_json(b[i]);
        if (!va || !vb || !va->is_object() || !vb->is_object()) {
            d.summary = "record " + std::to_string(i) + " of the transcript differs (not JSON)";
            return d;
        }
        const auto& oa = va->get_object();
        auto type = oa.find("record_type");
        const bool chunk = type != oa.end() && type->value() == "chunk";
        if (!chunk) {
            d.differences = json_differences(*va, *vb);
            d.summary = "the transcript's " +
                        (type != oa.end() && type->value().is_string() ? std::string(type->value().get_string())
                                                                      : std::string("record ") + std::to_string(i)) +
                        " differs";
            if (d.differences.empty()) d.summary += " in its bytes only (the same JSON value written differently)";
            return d;
        }
        auto idx = oa.find("index");
        if (idx != oa.end() && idx->value().is_int64()) d.row = static_cast<std::size_t>(idx->value().get_int64());
        d.summary = "transcript row " + (d.row ? std::to_string(*d.row) : std::to_string(i)) + " differs";
        auto kind = oa.find("kind");
        auto payload = oa.find("payload");
        if (kind != oa.end() && kind->value() == "tool_result" && payload != oa.end() && payload->value().is_object()) {
            // A result no later request carried (the run ended on the round cap).
            d.kind = DivergenceKind::tool_result;
            const auto& p = payload->value().get_object();
            auto text = [&](const char* key) {
                auto it = p.find(key);
                return it != p.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
            };
            d.summary = "the result of tool call " + text("tool_call_id") + " (" + text("name") + ") in transcript row " +
                        (d.row ? std::to_string(*d.row) : std::to_string(i)) + " differs from the recording";
        }
        d.differences = json_differences(*va, *vb);
        if (d.differences.empty())
            d.summary += " in its bytes only (the same JSON value written differently)";
        return d;
    }
    return std::nullopt;
}

// The trailer's closed_at, when the file has a trailer.
std::optional<std::string> trailer_closed_at(const std::vector<std::string>& lines) {
    if (lines.empty()) return std::nullopt;
    auto v = rath::detail::parse_json(lines.back());
    if (!v || !v->is_object()) return std::nullopt;
    const auto& o = v->get_object();
    auto type = o.find("record_type");
    auto closed = o.find("closed_at");
    if (type == o.end() || type->value() != "trailer" || closed == o.end() || !closed->value().is_string())
        return std::nullopt;
    return std::string(closed->value().get_string());
}

fs::path make_temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "rath-replay-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw ReplayError("cannot create a temporary directory under " +
                                                   fs::temp_directory_path().string());
    return tmpl;
}

}  // namespace

ReplayReport replay_session(const fs::path& given, ReplayOptions options) {
    ReplayReport report;
    fs::path transcript = given;
    if (persistence::is_recording_path(given)) {
        std::string name = given.filename().string();
        name.resize(name.size() - persistence::recording_suffix.size());
        transcript = given.parent_path() / (name + std::string(persistence::session_file_suffix));
        if (!options.recording) options.recording = given;
    }
    const fs::path recording = options.recording ? *options.recording : persistence::recording_path_for(transcript);
    report.transcript = transcript;
    report.recording = recording;

    const persistence::PersistedSession original = persistence::load_session_file(transcript);
    report.session_id = original.header.id;
    std::error_code ec;
    if (!fs::exists(recording, ec))
        throw ReplayError("no recording beside " + transcript.string() + " (expected " + recording.string() +
                          "); record the run with LoopOptions::record_llm or OPENRATH_RECORD_LLM=1");
    auto st = std::make_shared<ReplayState>();
    st->recording = llm::parse_recording(read_text(recording), recording.string());
    st->original = &original;
    const llm::RecordingConfig& config = st->recording.config;
    report.recorded_calls = st->recording.calls.size();
    if (config.session_id != original.header.id)
        throw ReplayError("the recording " + recording.string() + " belongs to session " + config.session_id +
                          ", not to " + original.header.id);
    if (config.seed_rows > original.chunks.size())
        throw ReplayError("the recording says the run started with " + std::to_string(config.seed_rows) +
                          " rows, but the transcript has " + std::to_string(original.chunks.size()));

    // The run's inputs as they were: the seed rows (with the sandbox target) and the
    // agent's rows, under the ids the original's lineage names as its parents.
    const auto& parents = original.header.parent_session_ids;
    std::vector<ChunkRowPtr> seed;
    for (std::size_t i = 0; i < config.seed_rows; ++i) seed.push_back(original.chunks[i]);
    SessionOptions so;
    so.sandbox_backend = original.header.sandbox_backend;
    so.sandbox_spec = original.header.sandbox_spec;
    if (parents.size() == 2) so.id = parents[0];
    const Session user(ChunkTable(std::span<const ChunkRowPtr>(seed)), std::move(so));
    std::vector<ChunkRowPtr> agent_rows;
    for (const auto& r : config.agent_rows) {
        const auto& o = r.get_object();
        auto kind = chunk_kind_from_string(o.at("kind").is_string() ? std::string_view(o.at("kind").get_string())
                                                                    : std::string_view());
        if (!kind || !o.at("payload").is_object())
            throw llm::RecordingFormatError(recording.string() + ": an agent row of an unknown kind");
        agent_rows.push_back(make_chunk_row(*kind, o.at("payload").get_object()));
    }
    st->agent_rows = agent_rows.size();
    SessionOptions ao;
    if (parents.size() == 2) ao.id = parents[1];
    const Session agent(ChunkTable(std::span<const ChunkRowPtr>(agent_rows)), std::move(ao));

    llm::Provider provider;
    provider.provider_kind = config.provider_kind;
    if (!config.model.empty()) provider.model = config.model;
    provider.sampling.extra_create_args = config.sampling;  // the recorded body fields, as sent
    auto client = std::make_shared<ReplayChatClient>(st, provider, options.runtime);

    const fs::path out_dir = options.output_dir ? *options.output_dir : make_temp_dir();
    fs::create_directories(out_dir);
    // The replay writes a file of the original's name: never over the original.
    if (fs::equivalent(out_dir, transcript.parent_path().empty() ? fs::path(".") : transcript.parent_path(), ec))
        throw ReplayError("the replay's output directory " + out_dir.string() +
                          " holds the original transcript, which the replay would replace; choose another");
    LoopOptions lo;
    lo.identity.session_id = original.header.id;
    lo.identity.created_at = original.header.created_at;
    // The original's records, read once: its trailer's time now, the comparison at the end.
    const std::vector<std::string> original_lines = split_lines(read_text(transcript));
    lo.identity.closed_at = trailer_closed_at(original_lines);
    lo.sandbox_handle_id = original.header.sandbox_handle_id;
    lo.provider = provider;
    lo.tools = recorded_tools(config, original, st->results);
    // A fresh local workspace only: a replay never runs commands in a directory of the
    // user's (a spec's working_dir), needs no remote sandbox that went with its run, and
    // cannot rebuild a workspace the program filled before the run (sandbox_prepared).
    const auto& spec = original.header.sandbox_spec;
    st->rerun_builtins = !config.sandbox_prepared &&
                         (!original.header.sandbox_backend ||
                          (*original.header.sandbox_backend == "local" && !(spec && spec->working_dir)));
    lo.executor = std::make_shared<ReplayExecutor>(st, client);
    lo.max_tool_rounds = config.max_tool_rounds;
    lo.persist_path = out_dir;
    lo.runtime = options.runtime;
    for (const auto& [k, v] : original.header.lineage_extras)
        if (k != "loop.truncated") lo.lineage_extras[k] = v;  // the loop adds it again when it truncates

    const Session out = run_session_loop(user, agent, std::move(lo));
    try {
        out.synchronize();
    } catch (const ReplayStopped&) {
        // st->divergence says why
    } catch (const std::exception& e) {
        ReplayDivergence d;
        d.kind = DivergenceKind::failed;
        {
            std::lock_guard lk(st->mu);
            d.call = st->calls_made;
        }
        d.summary = std::string("the replayed loop failed: ") + e.what();
        st->diverge(std::move(d));
    }
    report.replayed_transcript = persistence::persist_path_for(out_dir, out.id());
    if (!fs::exists(report.replayed_transcript, ec))
        report.replayed_transcript = persistence::partial_path_for(report.replayed_transcript);
    {
        std::lock_guard lk(st->mu);
        report.replayed_calls = st->calls_made;
        report.divergence = st->divergence;
        report.tools_rerun.assign(st->rerun.begin(), st->rerun.end());
        report.tools_recorded.assign(st->recorded_tools.begin(), st->recorded_tools.end());
    }
    if (!report.divergence && report.replayed_calls < report.recorded_calls) {
        ReplayDivergence d;
        d.kind = DivergenceKind::missing_call;
        d.call = report.replayed_calls;
        d.summary = "the replay finished after " + std::to_string(report.replayed_calls) + " model calls; " +
                    std::to_string(report.recorded_calls) + " were recorded";
        report.divergence = std::move(d);
    }
    if (!report.divergence)
        report.divergence = compare_transcripts(original_lines, report.replayed_transcript, report.replayed_calls);
    return report;
}

}  // namespace rath
