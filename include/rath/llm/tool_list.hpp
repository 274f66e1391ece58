#pragma once
// ToolList: the tool declarations of a chat request as an immutable, shared list.
// Copying a request (retries, executors, logs) or handing the same tools to many
// sessions costs a reference count, not a deep copy of every JSON schema; and a
// client's wire encoding of the list is computed once per list and shared by all
// requests that carry it (the agent loop reuses one list per tool table).
//
// Thread safety: a list never changes; copy it and read it (encodings included) from
// any thread at once.
#include <rath/llm/message.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rath::llm {

class ToolList {
public:
    ToolList();
    ToolList(std::vector<FunctionTool> tools);  // NOLINT(google-explicit-constructor): a vector is a list

    [[nodiscard]] std::size_t size() const noexcept { return tools().size(); }
    [[nodiscard]] bool empty() const noexcept { return tools().empty(); }
    [[nodiscard]] const FunctionTool& operator[](std::size_t i) const { return tools()[i]; }
    [[nodiscard]] std::vector<FunctionTool>::const_iterator begin() const noexcept { return tools().begin(); }
    [[nodiscard]] std::vector<FunctionTool>::const_iterator end() const noexcept { return tools().end(); }
    [[nodiscard]] const std::vector<FunctionTool>& tools() const noexcept;

    // Wire encodings, one slot per provider format: `make` runs once per list and
    // slot (thread-safe); every copy of this list sees the same string afterwards.
    enum class Encoding { openai = 0, anthropic = 1 };
    [[nodiscard]] const std::string& encoded(
        Encoding slot, const std::function<std::string(const std::vector<FunctionTool>&)>& make) const;
    // The same string as a shared pointer (it lives as long as any copy of the list),
    // for bodies that send it without copying it.
    [[nodiscard]] std::shared_ptr<const std::string> encoded_shared(
        Encoding slot, const std::function<std::string(const std::vector<FunctionTool>&)>& make) const;

private:
    struct State;
    std::shared_ptr<const State> state_;
};

}  // namespace rath::llm
