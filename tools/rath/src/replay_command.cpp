// rath replay FILE and rath sessions resume ID: the recorded model calls of a persisted
// session (llm/recording.hpp) replayed offline, or its agent run continued against a
// provider.
#include "cli.hpp"
#include "output.hpp"
#include "store.hpp"

#include <rath/config/store.hpp>
#include <rath/llm/recording.hpp>
#include <rath/loop/replay.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/persistence/paths.hpp>

#include <boost/json/serialize.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace rath::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// ---- replay ----

struct ReplayArgs {
    std::string file;
    std::optional<fs::path> out;
};

json::value opt_json(const std::optional<json::value>& v) { return v ? *v : json::value(nullptr); }

json::object report_to_json(const ReplayReport& r, bool kept) {
    json::object o;
    o["session_id"] = r.session_id;
    o["identical"] = r.identical();
    o["transcript"] = r.transcript.string();
    o["recording"] = r.recording.string();
    o["replayed_transcript"] = kept ? json::value(r.replayed_transcript.string()) : json::value(nullptr);
    o["recorded_calls"] = r.recorded_calls;
    o["replayed_calls"] = r.replayed_calls;
    json::array rerun, recorded;
    for (const auto& t : r.tools_rerun) rerun.emplace_back(t);
    for (const auto& t : r.tools_recorded) recorded.emplace_back(t);
    o["tools_rerun"] = std::move(rerun);
    o["tools_recorded"] = std::move(recorded);
    if (r.divergence) {
        const auto& d = *r.divergence;
        json::object dj;
        dj["kind"] = std::string(to_string(d.kind));
        dj["call"] = d.call;
        dj["row"] = d.row ? json::value(*d.row) : json::value(nullptr);
        dj["summary"] = d.summary;
        json::array diffs;
        for (const auto& x : d.differences)
            diffs.emplace_back(json::object{{"path", x.path}, {"recorded", opt_json(x.recorded)}, {"replayed", opt_json(x.replayed)}});
        dj["differences"] = std::move(diffs);
        dj["diff"] = format_differences(d.differences);
        o["divergence"] = std::move(dj);
    } else {
        o["divergence"] = nullptr;
    }
    return o;
}

std::string list_or_none(const std::vector<std::string>& v) {
    if (v.empty()) return "none";
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

void print_report(const ReplayReport& r, bool kept, const Style& style) {
    std::cout << style.bold("replay of session " + r.session_id) << '\n';
    std::cout << "  transcript  " << r.transcript.string() << '\n';
    std::cout << "  recording   " << r.recording.string() << " (" << r.recorded_calls << " model calls)\n";
    std::cout << "  replayed    " << r.replayed_calls << " model calls";
    if (kept) std::cout << "; transcript " << r.replayed_transcript.string();
    std::cout << '\n';
    std::cout << "  tools run again: " << list_or_none(r.tools_rerun) << '\n';
    std::cout << "  tools answered from the recording (not run): " << list_or_none(r.tools_recorded) << '\n';
    if (!r.divergence) {
        std::cout << style.green("identical") << ": every request matched its recording and the replayed "
                  << "transcript equals the original byte for byte\n";
        return;
    }
    const auto& d = *r.divergence;
    std::cout << style.red("DIVERGED") << " (" << to_string(d.kind) << ", model call " << d.call;
    if (d.row) std::cout << ", transcript row " << *d.row;
    std::cout << "): " << d.summary << '\n';
    if (!d.differences.empty()) std::cout << format_differences(d.differences);
}

void run_replay(const Context& ctx, const ReplayArgs& a) {
    std::error_code ec;
    fs::path file(a.file);
    if (!fs::is_regular_file(file, ec)) file = locate_session(ctx.sessions_dir(), a.file);
    ReplayOptions options;
    std::optional<fs::path> temp;
    if (a.out) {
        options.output_dir = *a.out;
    } else {
        std::string tmpl = (fs::temp_directory_path() / "rath-replay-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw CommandError("cannot create a temporary directory for the replay");
        temp = fs::path(tmpl);
        options.output_dir = *temp;
    }
    struct RemoveTemp {
        const std::optional<fs::path>& dir;
        ~RemoveTemp() {
            std::error_code e;
            if (dir) fs::remove_all(*dir, e);
        }
    } cleanup{temp};
    const ReplayReport report = replay_session(file, options);
    if (ctx.json)
        std::cout << json::serialize(report_to_json(report, a.out.has_value())) << '\n';
    else
        print_report(report, a.out.has_value(), Style(ctx.use_color()));
    if (!report.identical()) throw CLI::RuntimeError(exit_failure);
}

// ---- resume ----

struct ResumeArgs {
    std::string id;
    std::optional<std::string> message;
    std::optional<std::string> base_url;
    std::optional<std::string> provider;
    std::optional<std::string> model;
};

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

void run_resume(const Context& ctx, const ResumeArgs& a) {
    const auto persisted = load_session(ctx.sessions_dir(), a.id);
    const fs::path recording_path = persistence::recording_path_for(persisted.path);
    std::error_code ec;
    std::optional<llm::RecordingConfig> recorded;
    if (fs::is_regular_file(recording_path, ec))
        recorded = llm::parse_recording(read_text(recording_path), recording_path.string()).config;
    else
        std::cerr << "rath: session " << persisted.header.id << " has no recording (" << recording_path.string()
                  << "); resuming with its first system row as the agent prompt and the built-in tools\n";

    // The endpoint as the rest of the CLI resolves it: the named (or default) entry of
    // config.json, else the environment the client reads; the run's own model and
    // sampling from its recording.
    auto store = std::make_shared<config::ConfigStore>(ctx.config_path());
    llm::Provider provider;
    if (a.provider || store->default_llm_provider()) {
        provider = llm::Provider::from_config(a.provider ? std::optional<std::string_view>(*a.provider) : std::nullopt,
                                              store);
    } else if (recorded) {
        provider.provider_kind = recorded->provider_kind;
    }
    if (recorded) {
        if (!recorded->model.empty()) provider.model = recorded->model;
        provider.sampling.extra_create_args = recorded->sampling;
    }
    if (a.model) provider.model = *a.model;
    if (a.base_url) provider.base_url = *a.base_url;

    Session user = persisted.to_session();  // the same id: the new run's parent
    Session agent;
    LoopOptions lo;
    if (recorded) {
        std::vector<ChunkRowPtr> rows;
        for (const auto& r : recorded->agent_rows) {
            const auto& o = r.as_object();
            auto kind = chunk_kind_from_string(o.at("kind").as_string());
            if (!kind) throw CommandError(recording_path.string() + ": an agent row of an unknown kind");
            rows.push_back(make_chunk_row(*kind, o.at("payload").as_object()));
        }
        agent = Session(ChunkTable(std::span<const ChunkRowPtr>(rows)));
        lo.max_tool_rounds = recorded->max_tool_rounds;
        if (!recorded->user_tools.empty())
            std::cerr << "rath: the program's own tools are not available here and are not offered to the model: "
                      << list_or_none(recorded->user_tools) << '\n';
    } else {
        agent = persisted.to_resumable_pair().second;
    }
    if (a.message) user.append_chunk(user_text_chunk(*a.message));
    lo.provider = provider;
    lo.persist_path = ctx.sessions_dir();
    lo.record_llm = true;  // the continuation can be replayed and resumed in turn
    const Session out = run_session_loop(user, agent, std::move(lo));
    out.synchronize();
    const auto rows = out.chunks();
    const fs::path path = persistence::persist_path_for(ctx.sessions_dir(), out.id());
    if (ctx.json) {
        json::object o;
        o["id"] = out.id();
        o["resumed"] = persisted.header.id;
        o["path"] = path.string();
        o["chunk_count"] = rows.size();
        o["text"] = out.text() ? json::value(*out.text()) : json::value(nullptr);
        std::cout << json::serialize(o) << '\n';
        return;
    }
    Style style(ctx.use_color());
    std::cout << "resumed " << persisted.header.id << " as " << style.bold(out.id()) << " (" << rows.size()
              << " rows, " << (rows.size() - persisted.chunks.size()) << " new)\n";
    std::cout << "  persisted " << path.string() << '\n';
    if (auto t = out.text()) std::cout << "  answer    " << *t << '\n';
}

}  // namespace

void add_replay_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<ReplayArgs>();
    auto* cmd = app.add_subcommand(
        "replay",
        "Re-run a recorded session's agent loop offline against its recorded model answers and report the first "
        "divergence (exit 1), or that it replays identically (exit 0)");
    cmd->footer(
        "FILE is a persisted transcript (<id>.jsonl), its recording (<id>.llm.jsonl) or a session id in the sessions\n"
        "directory. Sessions are recorded when run with LoopOptions::record_llm or OPENRATH_RECORD_LLM=1.\n"
        "Built-in sandbox tools run again on a fresh local sandbox; the program's own tools, and the built-ins\n"
        "of a session whose sandbox was remote, answer with their recorded results (the report lists them).");
    cmd->add_option("file", args->file, "Transcript, recording or session id")->required();
    cmd->add_option("--out", args->out, "Keep the replayed transcript in this directory (default: a temp dir, removed)");
    cmd->callback([&ctx, args] { run_replay(ctx, *args); });
}

void add_resume_command(CLI::App& sessions, Context& ctx) {
    auto args = std::make_shared<ResumeArgs>();
    auto* cmd = sessions.add_subcommand(
        "resume", "Continue a persisted session with its recorded agent configuration and persist the new run");
    cmd->footer(
        "The provider is the --provider (or default) entry of config.json, else the environment's\n"
        "(OPENAI_API_KEY, OPENAI_BASE_URL, ...); the model, sampling, agent prompt and round limit are the\n"
        "recorded run's. The new session's parent is ID; it is persisted, with its recording, beside it.");
    cmd->add_option("id", args->id, "Session id, unique id prefix or file")->required();
    cmd->add_option("--message", args->message, "A user message appended before the run continues");
    cmd->add_option("--provider", args->provider, "config.json provider entry (default: llm.default_provider)");
    cmd->add_option("--base-url", args->base_url, "Send the requests to this base URL instead");
    cmd->add_option("--model", args->model, "Use this model instead of the recorded one");
    cmd->callback([&ctx, args] { run_resume(ctx, *args); });
}

}  // namespace rath::cli
