#pragma once
// Memory injection (memory_flow.md §4.4): what an Agent with a memory store puts in
// front of the user's transcript before the loop's first round.
//
// DefaultRecallInjection recalls with a Find on the store, the query being the last
// USER row with non-blank text, and returns one USER row per hit, in hit order, with
// the content "[untrusted memory:<uri>] <snippet, trimmed>" (or "[untrusted
// memory:<uri>]" for an empty snippet): recalled text is data the model reads, never
// instructions it should trust, so it is not sent as a system row (the upstream
// prompt-injection hardening).
//
// Thread safety: policies are immutable once built; async_inject may run for many
// sessions at once. Errors: async_inject never throws into the loop; a closed store,
// a Find that throws or returns a Failure all give no rows (with a warning on the
// "rath.flow" log channel for the first two).
#include <rath/memory/fwd.hpp>
#include <rath/memory/result.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/chunk_table.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rath::flow {

class MemoryInjectionPolicy {
public:
    virtual ~MemoryInjectionPolicy();
    // The rows to put before `transcript` for one run (none: the run sees the
    // transcript unchanged). Must not throw.
    [[nodiscard]] virtual boost::asio::awaitable<std::vector<ChunkRowPtr>> async_inject(
        ChunkTable transcript, memory::MemoryStorePtr store) const = 0;
};

class DefaultRecallInjection final : public MemoryInjectionPolicy {
public:
    // top_k: how many hits to recall; target_uri: the subtree searched (unset: the
    // whole store, e.g. "memory://user/memories").
    explicit DefaultRecallInjection(int top_k = 4, std::optional<std::string> target_uri = std::nullopt)
        : top_k_(top_k), target_uri_(std::move(target_uri)) {}

    [[nodiscard]] int top_k() const noexcept { return top_k_; }
    [[nodiscard]] const std::optional<std::string>& target_uri() const noexcept { return target_uri_; }

    [[nodiscard]] boost::asio::awaitable<std::vector<ChunkRowPtr>> async_inject(
        ChunkTable transcript, memory::MemoryStorePtr store) const override;

private:
    int top_k_;
    std::optional<std::string> target_uri_;
};

// The content of the last USER row whose content is a string with non-whitespace text
// (unstripped), or nullopt.
[[nodiscard]] std::optional<std::string> recall_query(const ChunkTable& transcript);

// The injected rows for `hits`, in order (see the file comment for their content).
[[nodiscard]] std::vector<ChunkRowPtr> memory_rows(const std::vector<memory::MemoryHit>& hits);

// A transcript as commit messages (memory_flow.md §4.3): SYSTEM, USER and ASSISTANT
// rows become {"role", "content"} (a missing content is "" for system and user, null
// for assistant); TOOL_RESULT rows are left out.
[[nodiscard]] std::vector<boost::json::object> commit_messages(const ChunkTable& transcript);

}  // namespace rath::flow
