#pragma once
// The bwrap arguments that build a sandbox's view of the host filesystem, shared by the
// `bwrap` backend and rath-sandbox-server so both sandboxes see the same host subset.
#include <rath/backend/bwrap.hpp>

#include <string>
#include <vector>

namespace rath::backend::detail {

// minimal: /usr, /bin, /sbin, /lib* read-only (merged-/usr symlinks recreated) and the
// safe list of /etc entries; read_only: every top-level host entry read-only except
// /proc, /dev, /tmp and the top directory of `workspace_mount`, with the secrets masked.
// Reads the host's root directory (a few stat calls): not for an io thread's hot path.
[[nodiscard]] std::vector<std::string> bwrap_host_view(HostFilesystem view, const std::string& workspace_mount);

}  // namespace rath::backend::detail
