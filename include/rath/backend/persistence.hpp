#pragma once
// Sandbox identity registry and persistence (backend_tools.md §5): stable local
// workspace directories and identity records of remote sandboxes under
// <config root>/sandboxes/. Ids used as path components must be UUIDs.
//
// Thread safety: every function may be called from any thread; writes of one record
// are serialized within the process, and a reader sees a whole record or none (atomic
// rename). Errors: SandboxIdError for an id that is not a UUID, BackendError when a
// directory or record cannot be written, SandboxRecordNotFound / ReattachUnsupported
// from reattach_remote, config::ConfigPathError from resolving the default root; a
// malformed record reads as absent (with a warning on "rath.backend").
#include <rath/backend/backend.hpp>
#include <rath/backend/spec.hpp>

#include <boost/json/value.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::backend::persistence {

inline constexpr std::string_view sandboxes_dir_name = "sandboxes";
inline constexpr std::string_view local_dir_name = "local";
inline constexpr std::string_view remote_dir_name = "opensandbox";
inline constexpr std::string_view record_suffix = ".json";
inline constexpr int schema_version = 1;

// "sandbox_id must be a UUID"
class SandboxIdError : public BackendError {
public:
    using BackendError::BackendError;
};
// "no remote sandbox recorded under id=... ; available: [...]" (Python's KeyError).
class SandboxRecordNotFound : public BackendError {
public:
    using BackendError::BackendError;
};
// "backend '<b>' does not support reattach (no .attach(remote_id) method); cannot reuse remote_id '<r>'"
class ReattachUnsupported : public BackendError {
public:
    using BackendError::BackendError;
};

// Canonical lowercase 8-4-4-4-12 form of any spelling Python's uuid.UUID accepts;
// throws SandboxIdError otherwise.
[[nodiscard]] std::string canonical_sandbox_id(std::string_view id);
[[nodiscard]] std::string new_sandbox_id();  // random UUIDv4

// Every function takes an optional root; unset means rath::config::resolve_config_dir().
using Root = std::optional<std::filesystem::path>;
[[nodiscard]] std::filesystem::path sandboxes_root(const Root& root = {});
[[nodiscard]] std::filesystem::path local_root(const Root& root = {});
[[nodiscard]] std::filesystem::path remote_root(const Root& root = {});
void ensure_dirs(const Root& root = {});

// ---- local identities (§5.3) ----
[[nodiscard]] std::filesystem::path local_path(std::string_view id, const Root& root = {});  // computes only
std::filesystem::path ensure_local(std::string_view id, const Root& root = {});
[[nodiscard]] std::string alloc_local_id(const Root& root = {});
[[nodiscard]] std::vector<std::string> list_local(const Root& root = {});  // sorted; non-UUID names ignored
bool delete_local(std::string_view id, const Root& root = {});
// Deletes directories whose own mtime is before now - older_than; returns their ids.
std::vector<std::string> prune_local(std::chrono::seconds older_than, const Root& root = {});
// The spec that reuses a persisted local workspace: {working_dir: local_path(id)}.
[[nodiscard]] SandboxSpec local_spec(std::string_view id, const Root& root = {});

// ---- remote identities (§5.4) ----
struct RemoteRecord {
    int schema_version = 0;
    std::string id;
    std::string backend;
    std::string remote_id;
    std::optional<SandboxSpec> spec;
    std::string created_at;    // ISO-8601 UTC with offset
    std::string last_used_at;
    bool operator==(const RemoteRecord&) const = default;
};

[[nodiscard]] std::filesystem::path remote_record_path(std::string_view id, const Root& root = {});
// Writes the record atomically (temp file + fsync + rename, mode 0600) and returns the
// registry UUID (not the remote id).
std::string record_remote(std::string_view backend, std::string_view remote_id,
                          const std::optional<SandboxSpec>& spec = std::nullopt,
                          std::optional<std::string> sandbox_id = std::nullopt, const Root& root = {});
void touch_remote(std::string_view id, const Root& root = {});
[[nodiscard]] std::optional<RemoteRecord> load_remote(std::string_view id, const Root& root = {});
[[nodiscard]] std::vector<RemoteRecord> list_remote(const Root& root = {});  // sorted by created_at
bool delete_remote(std::string_view id, const Root& root = {});  // never touches the sandbox
std::vector<std::string> prune_remote(std::chrono::seconds older_than, const Root& root = {});
// Attaches through the backend named in the record and touches it.
[[nodiscard]] SandboxPtr reattach_remote(std::string_view id, const Root& root = {});

// ---- spec JSON (§5.2, shared with the session header) ----
[[nodiscard]] boost::json::value spec_to_json(const std::optional<SandboxSpec>& spec);
[[nodiscard]] std::optional<SandboxSpec> spec_from_json(const boost::json::value& v);

// ISO-8601 helpers ("2025-01-02T03:04:05.123456+00:00"); parse treats a missing zone as UTC.
[[nodiscard]] std::string iso_utc(std::chrono::system_clock::time_point t);
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_iso(std::string_view s);

}  // namespace rath::backend::persistence
