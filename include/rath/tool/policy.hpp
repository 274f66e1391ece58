#pragma once
// Tool policy (backend_tools.md §6.6): the only gate before a tool runs. Attach one
// to a session; dispatch_flow_tool consults it and a denial becomes the
// `tool_policy_denied` failure without running the tool.
#include <rath/backend/result.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rath {
class Session;
}

namespace rath::tool {

struct ToolPolicy {
    std::optional<std::set<std::string>> allow_tools{};  // set (even empty): only these names
    std::vector<std::string> fs_roots{};                 // args.path must lie under one
    // Executables, by bare name (looked up on PATH) or absolute path; matched by the
    // canonical path of the file (symlinks resolved). A deny entry without '/' also
    // matches any executable with that base name. Setting either list makes commands
    // run without a shell (see check_and_rewrite).
    std::vector<std::string> command_allow{};
    std::vector<std::string> command_deny{};
    std::optional<long long> max_calls{};                // per session
};

// Immutable policy plus this session's call counter. Thread-safe: check() may be
// called from any thread at once (concurrent calls of one session share the budget).
class ToolPolicyEnforcer {
public:
    // Throws ToolArgumentError: "max_calls must be non-negative when set",
    // "pass command_allow or command_deny, not both".
    explicit ToolPolicyEnforcer(ToolPolicy policy);
    [[nodiscard]] const ToolPolicy& policy() const noexcept { return policy_; }
    // The denial reason, or nullopt (and one call of the budget used).
    //
    // With a command list set, an argument `cmd` (any tool) is turned into an argv:
    // a string is split shell-free (quotes and escapes; shell operators, expansions,
    // globs and newlines are refused, see lib/tool/shell_words.hpp), a list is taken
    // as is. argv[0] is resolved to a canonical path (PATH of this process, absolute,
    // or relative to `workspace`, the open sandbox's host directory if any); a name
    // that does not resolve is refused. `run_code` counts as running `python3`.
    // For `run_shell_command`, check_and_rewrite replaces `cmd` by that argv with
    // argv[0] the resolved path (workspace-relative names stay relative), so the
    // backend executes it without a shell: what was checked is what runs.
    [[nodiscard]] std::optional<std::string> check(const std::string& tool_name, const boost::json::object& args,
                                                   const std::optional<std::string>& workspace = std::nullopt);
    [[nodiscard]] std::optional<std::string> check_and_rewrite(const std::string& tool_name, boost::json::object& args,
                                                               const std::optional<std::string>& workspace = std::nullopt);
    [[nodiscard]] long long calls() const;

private:
    ToolPolicy policy_;
    mutable std::mutex mu_;
    long long calls_ = 0;
};

// Attaches `policy` to the session (by session id; forks get their own id and no
// policy). Pass nullopt to remove it. The attachment does not keep the session alive
// and goes with it: a process that serves millions of sessions keeps only the
// policies of sessions still held.
void set_tool_policy(const Session& session, std::optional<ToolPolicy> policy);
[[nodiscard]] std::shared_ptr<ToolPolicyEnforcer> tool_policy_enforcer(const Session& session);
// Sessions alive with a policy attached (for tests and metrics).
[[nodiscard]] std::size_t tool_policy_count();

}  // namespace rath::tool
