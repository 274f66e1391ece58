#pragma once
// Where the recorded provider samples live (../shared/fixtures, see DESIGN.md):
// $RATH_FIXTURES_DIR when set, else beside the source tree.
#include <cstdlib>
#include <filesystem>

namespace rath::test {

inline std::filesystem::path fixtures_dir() {
    if (const char* d = std::getenv("RATH_FIXTURES_DIR"); d && *d) return d;
    return std::filesystem::path(RATH_SOURCE_DIR) / ".." / "shared" / "fixtures";
}

}  // namespace rath::test
