// Child process of the two-process writer test: opens the store at argv[1] and writes
// argv[3] notes named <argv[2]>-<i>, each also rewriting the shared note
// memory://user/shared, and finds after every tenth write (so both processes update
// index.sqlite concurrently). Prints "done" at the end.
#include <rath/memory.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    if (argc != 4) return 2;
    using namespace rath::memory;
    MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", argv[1]}};
    auto backend = make_local_memory_backend();
    auto store = backend->open(spec);
    std::string tag = argv[2];
    int n = std::stoi(argv[3]);
    for (int i = 0; i < n; ++i) {
        std::string body = "note " + tag + " number " + std::to_string(i) + " " + std::string(512, 'x');
        auto r = store->dispatch(OpWrite{"memory://user/" + tag + "-" + std::to_string(i), body});
        if (is_failure(r)) return 3;
        r = store->dispatch(OpWrite{"memory://user/shared", tag + " " + std::string(4096, tag[0])});
        if (is_failure(r)) return 4;
        if (i % 10 == 0 && is_failure(store->dispatch(OpFind{"note " + tag}))) return 5;
    }
    backend->close(store);
    std::puts("done");
    return 0;
}
