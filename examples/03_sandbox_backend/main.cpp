// 03 — sandbox backends: open a sandbox, run commands and file payloads in it, see
// confinement refuse an escape, and run the same thing under bubblewrap when the
// machine allows it. No API key needed.
#include <rath/backend/bwrap.hpp>
#include <rath/backend/registry.hpp>
#include <rath/backend/stream.hpp>

#include <cstdio>
#include <variant>

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

int main() {
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
    }
    return 0;
}
