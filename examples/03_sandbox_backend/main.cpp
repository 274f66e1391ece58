// 03 — sandbox backends: open a sandbox, run commands and file payloads in it, see
// confinement refuse an escape, and run the same thing under bubblewrap when the
// machine allows it. Then the remote half: rath-sandbox-server (the OpenSandbox API on
// bubblewrap, built beside this program) started locally and a sandbox opened on it
// through the `opensandbox` backend. On each placement the same agent answers the same
// question with its built-in tools, which run where the session is placed. A model
// when a key is set (environment or config.json), else the fake LLM server: no key
// and no network needed.
#include "../common/example_llm.hpp"

#include <rath/backend/bwrap.hpp>
#include <rath/backend/opensandbox.hpp>
#include <rath/backend/registry.hpp>
#include <rath/backend/stream.hpp>
#include <rath/flow.hpp>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <variant>

extern char** environ;

namespace rb = rath::backend;

static void show(const char* what, const rb::DispatchResult& r) {
    if (auto* c = std::get_if<rb::CommandResult>(&r))
        std::printf("%-28s exit=%d stdout=%s", what, c->exit_code, c->stdout_data.c_str());
    else if (auto* f = std::get_if<rb::ToolExecutionFailure>(&r))
        std::printf("%-28s %s: %s\n", what, f->kind.c_str(), f->message.c_str());
    else if (auto* t = std::get_if<rb::FileContent>(&r))
        std::printf("%-28s %s\n", what, t->data.c_str());
    else if (auto* code = std::get_if<rb::CodeResult>(&r))
        std::printf("%-28s stdout=%s", what, code->stdout_data.c_str());
    else if (auto* w = std::get_if<rb::FileWriteResult>(&r))
        std::printf("%-28s wrote %lld bytes\n", what, w->bytes_written);
}

// rath-sandbox-server as a child process on a free loopback port; stopped (SIGTERM,
// which deletes its sandboxes) when this object goes away.
struct LocalSandboxServer {
    pid_t pid = -1;
    std::string url;
    std::string state_dir;
    ~LocalSandboxServer() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
            int st = 0;
            ::waitpid(pid, &st, 0);
        }
        std::error_code ec;
        if (!state_dir.empty()) std::filesystem::remove_all(state_dir, ec);
    }
    // "" on success, else why it could not start.
    std::string start(const std::string& api_key) {
        auto exe = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "rath-sandbox-server";
        if (::access(exe.c_str(), X_OK) != 0) return exe.string() + " is not built";
        std::string dir = (std::filesystem::temp_directory_path() / "rath-example03-XXXXXX").string();
        if (!::mkdtemp(dir.data())) return "mkdtemp failed";
        state_dir = dir;
        int fds[2];
        if (::pipe(fds) != 0) return "pipe failed";
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        std::vector<std::string> args{exe.string(), "--port", "0", "--state-dir", dir, "--api-key", api_key, "--quiet"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(fds[1]);
        if (rc != 0) {
            ::close(fds[0]);
            pid = -1;
            return "posix_spawn failed";
        }
        std::string line;
        while (line.find('\n') == std::string::npos) {
            pollfd p{fds[0], POLLIN, 0};
            char buf[256];
            if (::poll(&p, 1, 20000) <= 0) break;
            auto n = ::read(fds[0], buf, sizeof buf);
            if (n <= 0) break;
            line.append(buf, static_cast<std::size_t>(n));
        }
        ::close(fds[0]);
        auto at = line.find("http://");
        if (at == std::string::npos) return "the server did not start";
        url = line.substr(at, line.find('\n', at) - at);
        return {};
    }
};

// The same question asked of one agent on whichever sandbox the session is placed on: its
// built-in tools run there, so the answer shows where the commands executed.
static void ask_agent(const example::Llm& llm, const rb::SandboxPtr& sb) {
    rath::flow::Agent agent("Answer by running commands in the sandbox.", {.loop = {.provider = llm.provider}});
    auto user = rath::Session::from_user_message(
        "Which operating system and working directory does the sandbox have, and what is in hello.txt? "
        "Use run_shell_command.");
    user.bind_sandbox(sb);
    rath::Session out = agent(user);
    auto rows = out.chunks();
    std::cout << "agent transcript (" << rows.size() << " rows):\n" << out << "\n";
    user.close_sandbox();
}

static void remote_half(const example::Llm& llm) {
    LocalSandboxServer server;
    const std::string key = "example-key";
    if (auto why = server.start(key); !why.empty()) {
        std::printf("\n[opensandbox] skipped: %s\n", why.c_str());
        return;
    }
    std::printf("\n[opensandbox] rath-sandbox-server at %s\n", server.url.c_str());
    auto& backend = dynamic_cast<rb::OpenSandboxBackend&>(rb::get_backend("opensandbox"));
    auto o = backend.options();
    o.domain = server.url;
    o.api_key = key;
    o.default_image = "host";                      // the server's host-subset image
    o.default_entrypoint = {"sleep", "infinity"};  // the sandbox's main process
    o.persist_identity = false;                    // nothing to resume in an example
    backend.set_options(o);
    auto sb = backend.open();
    {
        rb::SandboxGuard guard(sb);  // the session below holds its own reference
        show("write hello.txt", sb->dispatch(rb::FilesWrite{.path = "hello.txt", .data = "hello from the remote sandbox\n"}));
        show("cat hello.txt", sb->dispatch(rb::CommandRun{.cmd = std::string("cat hello.txt")}));
        show("sleep 5 (timeout 0.3 s)", sb->dispatch(rb::CommandRun{.cmd = std::string("sleep 5"), .timeout = 0.3}));
        show("python code run", sb->dispatch(rb::CodeRun{.code = "print(sum(range(10)))"}));

        ask_agent(llm, sb);
    }
    backend.close(sb);  // idempotent: the last release above normally closed it already
    std::printf("sandbox closed: %s\n", sb->closed() ? "true" : "false");
}

int main() {
    // Offline: the fake server answers the question with one run_shell_command call, then
    // reports what the tool printed. With a key, a real model decides what to run.
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "sandbox"},
         "respond": {"tool_calls": [{"name": "run_shell_command",
                                     "arguments": {"cmd": "uname -s && pwd && cat hello.txt"}}]}},
        {"match": {"role": "tool"}, "respond": {"text": "The sandbox answered: {{last}}"}}
    ]})");
    std::printf("registered backends:");
    for (auto& n : rb::backend_names()) std::printf(" %s%s", n.c_str(), rb::is_backend_available(n) ? "" : "(unavailable)");
    std::printf("\n");

    for (const char* name : {"local", "bwrap"}) {
        if (std::string(name) == "bwrap" && !rb::BwrapBackend::probe().empty()) {
            std::printf("\n[bwrap] skipped: %s\n", rb::BwrapBackend::probe().c_str());
            continue;
        }
        std::printf("\n[%s]\n", name);
        auto& backend = rb::get_backend(name);
        auto sb = backend.open();  // a private temp workspace, removed on close
        rb::SandboxGuard guard(sb);  // refcount 1; the scope end closes it
        show("write hello.txt", sb->dispatch(rb::FilesWrite{.path = "hello.txt", .data = "hello from the workspace\n"}));
        show("cat hello.txt", sb->dispatch(rb::CommandRun{.cmd = std::string("cat hello.txt")}));
        show("read ../../etc/passwd", sb->dispatch(rb::FilesRead{.path = "../../etc/passwd"}));
        show("sleep 5 (timeout 0.3 s)", sb->dispatch(rb::CommandRun{.cmd = std::string("sleep 5"), .timeout = 0.3}));
        show("python code run", sb->dispatch(rb::CodeRun{.code = "print(sum(range(10)))"}));
        // A stream orders dispatches like a CUDA stream.
        rb::Stream s(sb);
        s.submit(rb::FilesWrite{.path = "log.txt", .data = "a"});
        s.submit(rb::CommandRun{.cmd = std::string("printf b >> log.txt")});
        show("stream write+append+read", s.submit(rb::FilesRead{.path = "log.txt"}).get());
        ask_agent(llm, sb);
    }
    remote_half(llm);
    return 0;
}
