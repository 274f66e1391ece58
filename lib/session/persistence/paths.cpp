#include <rath/config/paths.hpp>
#include <rath/session/error.hpp>
#include <rath/session/persistence/paths.hpp>

#include "lib/session/uuid.hpp"

#include <cstdlib>
#include <string>

namespace rath::persistence {

namespace fs = std::filesystem;

namespace {

std::string canonical_id(std::string_view id) {
    auto c = detail::canonical_uuid(id);
    if (!c)
        throw PersistenceError("invalid session id '" + std::string(id) +
                               "': persisted sessions are named by UUID");
    return *c;
}

}  // namespace

fs::path default_config_dir() {
    try {
        return config::resolve_config_dir();
    } catch (const config::ConfigPathError& e) {
        const char* env = std::getenv(std::string(config::openrath_home_env).c_str());
        throw PersistenceError(e.what(), env ? env : "");
    }
}

fs::path default_sessions_dir() { return default_config_dir() / std::string(sessions_dir_name); }

fs::path ensure_sessions_dir() {
    fs::path d = default_sessions_dir();
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw PersistenceError("cannot create sessions directory '" + d.string() + "': " + ec.message(), d.string());
    return d;
}

fs::path session_file_path(std::string_view id) {
    return default_sessions_dir() / (canonical_id(id) + std::string(session_file_suffix));
}

fs::path session_partial_path(std::string_view id) {
    return default_sessions_dir() / (canonical_id(id) + std::string(session_partial_suffix));
}

fs::path persist_path_for(const fs::path& configured, std::string_view session_id) {
    std::string text = configured.string();
    if (text.find(session_id_placeholder) != std::string::npos) {
        std::string out;
        std::size_t from = 0;
        for (std::size_t at; (at = text.find(session_id_placeholder, from)) != std::string::npos;
             from = at + session_id_placeholder.size())
            out.append(text, from, at - from).append(session_id);
        out.append(text, from);
        return out;
    }
    std::error_code ec;
    if (!configured.has_filename() || fs::is_directory(configured, ec))
        return configured / (std::string(session_id) + std::string(session_file_suffix));
    return configured;
}

fs::path partial_path_for(const fs::path& final_path) {
    return final_path.parent_path() / (final_path.filename().string() + std::string(partial_suffix));
}

namespace {
bool has_suffix(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

fs::path recording_path_for(const fs::path& transcript) {
    std::string name = transcript.filename().string();
    if (has_suffix(name, partial_suffix)) name.resize(name.size() - partial_suffix.size());
    if (has_suffix(name, session_file_suffix)) name.resize(name.size() - session_file_suffix.size());
    return transcript.parent_path() / (name + std::string(recording_suffix));
}

bool is_recording_path(const fs::path& path) { return has_suffix(path.filename().string(), recording_suffix); }

}  // namespace rath::persistence
