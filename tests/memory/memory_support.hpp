#pragma once
// Shared by the memory suites: a local store in a temp directory.
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.hpp"

#include <string>

namespace rath::test {

inline memory::MemoryStoreSpec spec_at(const std::filesystem::path& dir, boost::json::object extra = {}) {
    memory::MemoryStoreSpec s;
    boost::json::object o = std::move(extra);
    o["path"] = dir.string();
    s.options = std::move(o);
    return s;
}

template <class T>
const T& expect(const memory::MemoryResult& r) {
    if (const auto* f = std::get_if<memory::ExecutionFailure>(&r))
        FAIL("unexpected failure: " << memory::to_string(f->kind) << ": " << f->message);
    REQUIRE(std::holds_alternative<T>(r));
    return std::get<T>(r);
}

inline const memory::ExecutionFailure& expect_failure(const memory::MemoryResult& r, memory::FailureKind kind) {
    REQUIRE(std::holds_alternative<memory::ExecutionFailure>(r));
    const auto& f = std::get<memory::ExecutionFailure>(r);
    CHECK(memory::to_string(f.kind) == memory::to_string(kind));
    return f;
}

}  // namespace rath::test
