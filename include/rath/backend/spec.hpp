#pragma once
// BackendSandboxSpec (backend_tools.md §1.3): every field optional.
#include <boost/json/value.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rath::backend {

struct SandboxSpec {
    std::optional<std::string> image{};                       // container image (local ignores it)
    std::optional<std::vector<std::string>> entrypoint{};     // container entry process
    std::optional<std::map<std::string, std::string>> env{};  // sandbox-level environment
    std::optional<std::chrono::duration<double>> timeout{};   // sandbox lifetime (remote backends)
    std::optional<std::string> working_dir{};                 // local: the workspace directory

    bool operator==(const SandboxSpec&) const = default;

    // `Session::to(backend, "<path>")` shorthand.
    [[nodiscard]] static SandboxSpec from_working_dir(std::string dir) {
        SandboxSpec s;
        s.working_dir = std::move(dir);
        return s;
    }

    // The spec JSON shared with the session header (backend_tools.md §5.2): all five
    // keys ("image", "entrypoint", "env", "timeout_seconds", "working_dir"), unset
    // ones as null. from_json also accepts the key "timeout".
    [[nodiscard]] boost::json::object to_json() const;
    // Throws rath::backend::BackendError naming the offending key on a malformed object.
    [[nodiscard]] static SandboxSpec from_json(const boost::json::value& v);
};

}  // namespace rath::backend
