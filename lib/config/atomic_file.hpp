#pragma once
// One way rath replaces a file so that a reader sees the old or the new content, never a
// torn one: a temp file in the target's directory, then rename. Used by the sandbox
// records and the memory store; callers turn a failure into their own error type.
#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace rath::detail {

struct AtomicWrite {
    // Temp file name in the target's directory: six X's, optionally followed by a suffix
    // (mkstemps). Callers pick one their directory walkers never mistake for content.
    std::string_view temp_name;
    mode_t mode = 0644;
    // fsync the file before the rename and the directory after it.
    bool durable = false;
};

struct AtomicWriteError {
    enum class Stage { none, create, write, rename } stage = Stage::none;
    int error = 0;  // errno
    explicit operator bool() const noexcept { return stage != Stage::none; }
};

// Never leaves the temp file behind; never throws (except std::bad_alloc).
[[nodiscard]] AtomicWriteError write_file_atomically(const std::filesystem::path& target, std::string_view bytes,
                                                     const AtomicWrite& how);

}  // namespace rath::detail
