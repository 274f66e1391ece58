#include "store.hpp"

#include "cli.hpp"

#include <rath/session/persistence/paths.hpp>

#include <iostream>
#include <string>

namespace rath::cli {

namespace fs = std::filesystem;

std::vector<persistence::PersistedSessionMeta> list_sessions(const fs::path& dir) {
    std::vector<PersistenceError> skipped;
    auto metas = persistence::list_persisted_sessions({.dir = dir, .skipped = &skipped});
    for (const auto& e : skipped) std::cerr << "rath: skipped " << e.what() << '\n';
    return metas;
}

fs::path locate_session(const fs::path& dir, std::string_view what) {
    if (what.empty()) throw CommandError("empty session id");
    std::error_code ec;
    const fs::path as_path(what);
    if (what.find('/') != std::string_view::npos && fs::is_regular_file(as_path, ec)) return as_path;
    const std::string id(what);
    if (auto final = dir / (id + std::string(persistence::session_file_suffix)); fs::is_regular_file(final, ec))
        return final;
    if (auto partial = dir / (id + std::string(persistence::session_partial_suffix)); fs::is_regular_file(partial, ec))
        return partial;
    std::vector<persistence::PersistedSessionMeta> matches;
    for (auto& m : list_sessions(dir))
        if (std::string_view(m.id).starts_with(what)) matches.push_back(std::move(m));
    if (matches.empty()) throw CommandError("no session '" + id + "' in " + dir.string());
    if (matches.size() > 1) {
        std::string msg = "'" + id + "' matches " + std::to_string(matches.size()) + " sessions:";
        for (const auto& m : matches) msg += " " + m.id;
        throw CommandError(msg);
    }
    return matches.front().path;
}

persistence::PersistedSession load_session(const fs::path& dir, std::string_view what) {
    return persistence::load_session_file(locate_session(dir, what));
}

}  // namespace rath::cli
