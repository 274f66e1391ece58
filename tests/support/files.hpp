#pragma once
// Whole-file reads and writes for tests that check what rath wrote or plant what it reads.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace rath::test {

// The bytes of `p`; empty when it cannot be read.
inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces `p` with `text`, creating its parent directories.
inline void write_file(const std::filesystem::path& p, std::string_view text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace rath::test
