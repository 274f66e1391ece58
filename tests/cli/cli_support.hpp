#pragma once
// What the cli suites share: running build/bin programs (rath first) to their end.
#include "support/child_process.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

namespace rath::test {

inline std::string bin_path(const std::string& program) { return std::string(RATH_BINARY_DIR) + "/bin/" + program; }

// Runs build/bin/<program> with `args`; a missing program fails the test.
inline ChildResult run_program(const std::string& program, std::vector<std::string> args) {
    const std::string bin = bin_path(program);
    REQUIRE_MESSAGE(::access(bin.c_str(), X_OK) == 0, bin << " is not built");
    return run_child(bin, std::move(args));
}

inline ChildResult rath_cli(std::vector<std::string> args) { return run_program("rath", std::move(args)); }

inline bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace rath::test
