// rath sessions list | show | export | tail | prune: the persisted JSONL store, read and
// pruned through the library's loader (never parsed here by hand).
#include "cli.hpp"
#include "output.hpp"
#include "render.hpp"
#include "store.hpp"
#include "viewer.hpp"

#include <rath/session/persistence/paths.hpp>
#include <rath/session/persistence/records.hpp>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

namespace rath::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

json::object meta_to_json(const persistence::PersistedSessionMeta& m) {
    json::object o;
    o["id"] = m.id;
    o["path"] = m.path.string();
    o["created_at"] = m.created_at;
    o["lineage_operator"] = m.lineage_operator;
    o["lineage_kind"] = to_string(m.lineage_kind);
    o["chunk_count"] = m.chunk_count;
    o["closed"] = m.closed;
    return o;
}

// "2026-11-27T14:50:23.123456+00:00" -> "2026-11-27 14:50:23"
std::string short_time(std::string_view iso) {
    std::string out(iso.substr(0, 19));
    if (out.size() > 10 && out[10] == 'T') out[10] = ' ';
    return out;
}

void run_list(const Context& ctx) {
    auto metas = list_sessions(ctx.sessions_dir());
    if (ctx.json) {
        json::array a;
        for (const auto& m : metas) a.emplace_back(meta_to_json(m));
        std::cout << json::serialize(a) << '\n';
        return;
    }
    if (metas.empty()) {
        std::cout << "no sessions in " << ctx.sessions_dir().string() << '\n';
        return;
    }
    Style style(ctx.use_color());
    std::cout << style.bold(pad("ID", 38) + pad("CREATED (UTC)", 21) + pad("OPERATOR", 20) + pad("ROWS", 6) + "STATE")
              << '\n';
    for (const auto& m : metas)
        std::cout << pad(m.id, 38) << pad(short_time(m.created_at), 21) << pad(m.lineage_operator, 20)
                  << pad(std::to_string(m.chunk_count), 6) << (m.closed ? style.green("closed") : style.yellow("partial"))
                  << '\n';
}

void run_show(const Context& ctx, const std::string& id) {
    auto s = load_session(ctx.sessions_dir(), id);
    if (ctx.json) {
        std::cout << json::serialize(session_to_json(s)) << '\n';
        return;
    }
    Style style(ctx.use_color());
    std::cout << render_header_text(s, style) << '\n' << render_rows_text(s.chunks, 0, style);
}

void run_export(const Context& ctx, const std::string& id, const std::string& format,
                const std::optional<fs::path>& out) {
    auto s = load_session(ctx.sessions_dir(), id);
    if (format == "html")
        emit(render_html({s.to_session()}, "rath session " + s.header.id), out);
    else
        emit(format == "md" ? render_markdown(s) : render_jsonl(s), out);
}

// Follows the session's file: the rows so far, then each row as it is written, until the
// trailer is written (the partial file renamed to its final name) or --timeout passes.
// Each poll reloads the file through the library's loader, which reads a file being
// written up to its last complete record.
int run_tail(const Context& ctx, const std::string& id, double interval_s, double timeout_s) {
    const fs::path dir = ctx.sessions_dir();
    fs::path path = locate_session(dir, id);
    Style style(ctx.use_color());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    std::size_t shown = 0;
    bool header_shown = false;
    for (;;) {
        std::error_code ec;
        if (!fs::exists(path, ec)) {
            // The writer closed the session: its partial file became <id>.jsonl.
            const std::string name = path.filename().string();
            if (name.ends_with(persistence::partial_suffix)) {
                auto final = path.parent_path() / name.substr(0, name.size() - persistence::partial_suffix.size());
                if (fs::exists(final, ec)) path = final;
            }
            if (!fs::exists(path, ec)) throw CommandError("session file " + path.string() + " disappeared");
        }
        std::optional<persistence::PersistedSession> loaded;
        try {
            loaded = persistence::load_session_file(path);
        } catch (const PersistenceError&) {
            // Renamed to its final name between the check above and the read: go again.
            if (fs::exists(path, ec)) throw;
            continue;
        }
        const auto& s = *loaded;
        if (ctx.json) {
            for (; shown < s.chunks.size(); ++shown) {
                json::object o;
                o["index"] = shown;
                o["kind"] = to_string(s.chunks[shown]->kind());
                o["payload"] = s.chunks[shown]->payload();
                std::cout << json::serialize(o) << '\n';
            }
        } else {
            if (!header_shown) {
                std::cout << style.bold("session " + s.header.id) << "  " << s.header.lineage_operator << "  "
                          << path.string() << '\n';
                header_shown = true;
            }
            std::cout << render_rows_text(s.chunks, shown, style);
            shown = s.chunks.size();
        }
        std::cout.flush();
        if (s.closed) {
            if (!ctx.json) std::cout << style.green("closed") << "  usage " << usage_text(s.usage) << '\n';
            return exit_ok;
        }
        if (timeout_s > 0 && std::chrono::steady_clock::now() >= deadline) {
            std::cerr << "rath: session " << s.header.id << " still open after " << timeout_s << " s\n";
            return exit_failure;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
    }
}

// "30d", "12h", "90m", "45s", "2w"; a bare number is days.
std::chrono::seconds parse_age(const std::string& text) {
    std::size_t used = 0;
    double n = 0;
    try {
        n = std::stod(text, &used);
    } catch (const std::exception&) {
        throw CLI::ValidationError("--older-than", "expected an age such as 30d, 12h, 90m, 45s or 2w: '" + text + "'");
    }
    std::string unit = text.substr(used);
    double seconds_per = 86400;
    if (unit == "s")
        seconds_per = 1;
    else if (unit == "m")
        seconds_per = 60;
    else if (unit == "h")
        seconds_per = 3600;
    else if (unit == "d" || unit.empty())
        seconds_per = 86400;
    else if (unit == "w")
        seconds_per = 7 * 86400;
    else
        throw CLI::ValidationError("--older-than", "unknown unit '" + unit + "' (s, m, h, d or w)");
    if (n < 0) throw CLI::ValidationError("--older-than", "a negative age");
    return std::chrono::seconds(static_cast<long long>(n * seconds_per));
}

void run_prune(const Context& ctx, const std::optional<std::string>& older_than, const std::optional<std::size_t>& keep,
               bool dry_run) {
    const fs::path dir = ctx.sessions_dir();
    auto metas = list_sessions(dir);  // oldest first
    std::vector<bool> doomed(metas.size(), false);
    if (older_than) {
        const auto cutoff = std::chrono::system_clock::now() - parse_age(*older_than);
        for (std::size_t i = 0; i < metas.size(); ++i)
            if (metas[i].created_at_time < cutoff) doomed[i] = true;
    }
    if (keep && metas.size() > *keep)
        for (std::size_t i = 0; i < metas.size() - *keep; ++i) doomed[i] = true;
    json::array removed;
    Style style(ctx.use_color());
    std::size_t count = 0;
    for (std::size_t i = 0; i < metas.size(); ++i) {
        if (!doomed[i]) continue;
        const auto& m = metas[i];
        if (!dry_run) persistence::delete_session(m.id, m.path);
        ++count;
        if (ctx.json)
            removed.emplace_back(meta_to_json(m));
        else
            std::cout << (dry_run ? "would remove " : "removed ") << m.id << "  " << short_time(m.created_at) << "  "
                      << m.path.filename().string() << '\n';
    }
    if (ctx.json) {
        json::object o;
        o["dry_run"] = dry_run;
        o["removed"] = std::move(removed);
        o["kept"] = metas.size() - count;
        std::cout << json::serialize(o) << '\n';
    } else {
        std::cout << style.bold(std::to_string(count) + (dry_run ? " would be removed, " : " removed, ") +
                                std::to_string(metas.size() - count) + " kept")
                  << '\n';
    }
}

}  // namespace

void add_sessions_command(CLI::App& app, Context& ctx) {
    auto* sessions = app.add_subcommand("sessions", "Persisted sessions: list, show, export, tail, prune");
    sessions->require_subcommand(1);

    auto* list = sessions->add_subcommand("list", "List the persisted sessions, oldest first");
    list->callback([&ctx] { run_list(ctx); });

    auto id = std::make_shared<std::string>();
    auto* show = sessions->add_subcommand("show", "Print a session's transcript: roles, tool calls and results, usage");
    show->add_option("id", *id, "Session id, unique id prefix, or path of a .jsonl file")->required();
    show->callback([&ctx, id] { run_show(ctx, *id); });

    auto format = std::make_shared<std::string>("jsonl");
    auto out = std::make_shared<std::optional<fs::path>>();
    auto* exp = sessions->add_subcommand("export", "Write a session as JSONL records, Markdown or an HTML page");
    exp->add_option("id", *id, "Session id, unique id prefix, or path of a .jsonl file")->required();
    exp->add_option("--format,-f", *format,
                    "jsonl (the persisted records), md (Markdown) or html (the lineage viewer, this session only)")
        ->check(CLI::IsMember({"jsonl", "md", "html"}))
        ->capture_default_str();
    exp->add_option("--output,-o", *out, "Write to this file instead of stdout");
    exp->callback([&ctx, id, format, out] { run_export(ctx, *id, *format, *out); });

    auto interval = std::make_shared<double>(0.2);
    auto timeout = std::make_shared<double>(0);
    auto* tail = sessions->add_subcommand(
        "tail", "Print a session's rows and follow its file until the run closes it (--json: one row per line)");
    tail->add_option("id", *id, "Session id, unique id prefix, or path of a .jsonl[.__partial__] file")->required();
    tail->add_option("--interval", *interval, "Seconds between polls of the file")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    tail->add_option("--timeout", *timeout, "Give up (exit 1) after this many seconds; 0 waits for ever")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    tail->callback([&ctx, id, interval, timeout] {
        if (int rc = run_tail(ctx, *id, *interval, *timeout); rc != exit_ok) throw CLI::RuntimeError(rc);
    });

    auto older = std::make_shared<std::optional<std::string>>();
    auto keep = std::make_shared<std::optional<std::size_t>>();
    auto dry = std::make_shared<bool>(false);
    auto* prune = sessions->add_subcommand(
        "prune", "Delete sessions older than an age and/or all but the newest N (partial files included)");
    prune->add_option("--older-than", *older, "Age: 30d, 12h, 90m, 45s, 2w (a bare number is days)");
    prune->add_option("--keep", *keep, "Keep only the N newest sessions");
    prune->add_flag("--dry-run,-n", *dry, "Print what would be removed; remove nothing");
    prune->callback([&ctx, older, keep, dry] {
        if (!*older && !*keep) throw CLI::ValidationError("prune", "give --older-than, --keep or both");
        run_prune(ctx, *older, *keep, *dry);
    });
}

}  // namespace rath::cli
