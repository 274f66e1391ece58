#include <rath/session/lineage.hpp>

#include <array>
#include <utility>

namespace rath {

namespace {
constexpr std::array<std::pair<LineageKind, std::string_view>, 9> kKinds{{
    {LineageKind::unknown, "unknown"},
    {LineageKind::leaf_user, "leaf_user"},
    {LineageKind::leaf_system, "leaf_system"},
    {LineageKind::op_create, "op_create"},
    {LineageKind::op_session_loop, "op_session_loop"},
    {LineageKind::op_fork, "op_fork"},
    {LineageKind::op_detach, "op_detach"},
    {LineageKind::op_merge, "op_merge"},
    {LineageKind::op_session_compress, "op_session_compress"},
}};
}  // namespace

std::string_view to_string(LineageKind kind) noexcept {
    for (auto& [k, s] : kKinds)
        if (k == kind) return s;
    return "unknown";
}

std::optional<LineageKind> lineage_kind_from_string(std::string_view s) noexcept {
    for (auto& [k, v] : kKinds)
        if (v == s) return k;
    return std::nullopt;
}

}  // namespace rath
