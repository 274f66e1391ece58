// A process that starts two `sleep 600` children, the first with die_with_parent
// (tests/support/child_process.hpp), prints "<pid of the first> <pid of the second>" and
// waits to be killed: the test kills it and looks at which child outlived it.
#include "tests/support/child_process.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>

int main() {
    try {
        auto tied = rath::test::spawn_with_stdout_pipe("/bin/sleep", {"600"}, {.die_with_parent = true, .netns = {}});
        auto loose = rath::test::spawn_with_stdout_pipe("/bin/sleep", {"600"});
        std::printf("%d %d\n", static_cast<int>(tied.pid), static_cast<int>(loose.pid));
        std::fflush(stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "spawning_parent: %s\n", e.what());
        return 2;
    }
    for (;;) ::pause();
}
