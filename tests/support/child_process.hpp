#pragma once
// A helper process for the tests that need one (kill -9 durability, exit with sessions in
// flight): started with posix_spawn, its stdout on a pipe the test reads.
#include <spawn.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace rath::test {

struct SpawnedChild {
    pid_t pid = -1;
    int out_fd = -1;  // read end of the child's stdout; the caller closes it
};

// Throws if the pipe or the spawn fails.
inline SpawnedChild spawn_with_stdout_pipe(const std::string& path, std::vector<std::string> args) {
    int pipefd[2];
    if (::pipe(pipefd) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addclose(&fa, pipefd[1]);
    std::vector<char*> argv{const_cast<char*>(path.c_str())};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    SpawnedChild child;
    const int rc = posix_spawn(&child.pid, path.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(pipefd[1]);
    if (rc != 0) {
        ::close(pipefd[0]);
        throw std::runtime_error("posix_spawn " + path + " failed: " + std::to_string(rc));
    }
    child.out_fd = pipefd[0];
    return child;
}

}  // namespace rath::test
