// 09 — memory: an agent with a local memory store. Two notes are written, recalled
// with BM25 (no embedding model needed), then an agent turn sees the recalled notes in
// front of the user's message and its transcript is committed back into the store.
#include "../common/example_llm.hpp"
#include "../common/scratch_dir.hpp"

#include <rath/flow.hpp>
#include <rath/memory.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <system_error>

namespace memory = rath::memory;

namespace {

bool report_failure(const char* what, const memory::MemoryResult& r) {
    if (const auto* f = std::get_if<memory::ExecutionFailure>(&r)) {
        std::printf("[error] %s: %s: %s\n", what, std::string(memory::to_string(f->kind)).c_str(), f->message.c_str());
        return true;
    }
    return false;
}

}  // namespace

int main() {
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "theme"},
         "respond": {"text": "A dark colour theme: you prefer it when you read code at night."}}
    ]})");

    example::ScratchDir dir("09-memory");
    memory::MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", dir.path.string()}};
    memory::MemoryStorePtr store = memory::make_local_memory_backend()->open(spec);
    std::printf("store: %s\n", store->handle().c_str());

    std::promise<memory::MemoryResult> committed;
    rath::flow::Agent agent(
        "You are a helpful assistant. Use what you remember about the user. Answer in one sentence.",
        {.loop = {.provider = llm.provider},
         .memory = store,
         .memory_inject = std::make_shared<rath::flow::DefaultRecallInjection>(3, "memory://user/memories"),
         .commit_on_forward = true,
         .on_commit = [&committed](const rath::Session&, const memory::MemoryResult& r) { committed.set_value(r); }});

    if (report_failure("remember", agent->remember_memory("The user prefers a dark colour theme at night.")) ||
        report_failure("remember", agent->remember_memory("The user reads English and writes Python.")))
        return 1;
    std::printf("[ok] wrote two preference notes\n");

    memory::MemoryResult recalled = agent->recall_memory("reading code at night", 3);
    if (report_failure("recall", recalled)) return 1;
    const auto& hits = std::get<memory::FindResult>(recalled).hits;
    std::printf("[ok] recall returned %zu hit(s):\n", hits.size());
    for (const auto& h : hits) std::printf("      %6.3f  %s\n", h.score, h.uri.c_str());

    rath::Session out = agent(rath::Session::from_user_message(
        "I am reading code at night. Which editor theme should I use?"));
    auto rows = out.chunks();  // waits for the recall and the loop; not for the commit
    std::printf("\nthe model received these recalled notes before the question:\n");
    for (const auto& row : rows) {
        const auto* c = row->payload().if_contains("content");
        if (row->kind() == rath::ChunkKind::user && c && c->is_string() &&
            c->as_string().starts_with("[untrusted memory:"))
            std::printf("  %s\n", c->as_string().c_str());
    }
    std::printf("answer: %s\n", out.text().value_or("").c_str());

    auto done = committed.get_future();
    if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
        std::printf("[error] the commit did not finish\n");
        return 1;
    }
    memory::MemoryResult commit = done.get();
    if (report_failure("commit", commit)) return 1;
    std::printf("[ok] committed the turn transcript into memory at %s\n",
                std::get<memory::CommitResult>(commit).archived_uri.value_or("?").c_str());

    agent->close();  // the agent's reference was the last: the store closes
    std::printf("store closed: %s\n", store->closed() ? "true" : "false");
    return 0;
}
