#pragma once
// Shared by the examples: a fresh directory for one run (a memory store's root),
// removed when the program ends.
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace example {

struct ScratchDir {
    std::filesystem::path path;
    // `name` goes into the directory name ("rath-<name>-XXXXXX" under the temp dir).
    explicit ScratchDir(std::string_view name) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / ("rath-" + std::string(name) + "-XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
        path = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace example
