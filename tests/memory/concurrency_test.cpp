#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/child_process.hpp"

#include <sys/wait.h>

#include <fstream>
#include <iterator>

using namespace rath::memory;
using rath::test::expect;
namespace fs = std::filesystem;

TEST_CASE("two processes writing one store lose no write and leave no torn file") {
    rath::test::TempDir dir;
    const std::string child = std::string(RATH_BINARY_DIR) + "/bin/memory_writer_child";
    constexpr int per_child = 120;
    auto a = rath::test::spawn_with_stdout_pipe(child, {dir.path().string(), "a", std::to_string(per_child)});
    auto b = rath::test::spawn_with_stdout_pipe(child, {dir.path().string(), "b", std::to_string(per_child)});
    for (auto* c : {&a, &b}) {
        int status = 0;
        REQUIRE(::waitpid(c->pid, &status, 0) == c->pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        ::close(c->out_fd);
    }
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    auto list = expect<ListResult>(store->dispatch(OpList{"memory://user"})).entries;
    CHECK(list.size() == 2 * per_child + 1);
    std::ifstream in(dir.path() / "user/shared.md", std::ios::binary);
    std::string shared((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bool whole = shared == "a " + std::string(4096, 'a') || shared == "b " + std::string(4096, 'b');
    CHECK(whole);
    // The index both processes updated agrees with the files: every note is scored.
    auto hits = expect<FindResult>(store->dispatch(OpFind{"note a number 7", std::nullopt, 1000})).hits;
    CHECK(hits.size() == 2 * per_child + 1);
    CHECK(hits[0].uri == "memory://user/a-7");
    int leftovers = 0;
    for (const auto& e : fs::directory_iterator(dir.path() / "user"))
        if (e.path().filename().string().starts_with(".rath-tmp-")) ++leftovers;
    CHECK(leftovers == 0);
    backend->close(store);
}
