#pragma once
// Selector (memory_flow.md §4.6 [UPSTREAM]): LLM-backed routing over self-describing
// workflows. select() shows the model the conversation plus a numbered menu of the
// candidates' descriptions and returns the chosen workflow, or an EmptyWorkflow when
// none applies (-1, out of range, or no index in the reply).
//
// Thread safety: select may run from several threads at once. Cancellation: the
// coroutine form is cancelled with its caller. Errors: ProviderError from the model
// call, std::runtime_error when the answer breaks the rules of select_session.
#include <rath/flow/module_holder.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/loop/executor.hpp>

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rath::llm {
class ChatClient;
}

namespace rath::flow {

extern const char* const default_select_instruction;

struct SelectorOptions {
    std::string select_instruction = default_select_instruction;
    std::string description{};
    std::shared_ptr<LoopExecutor> executor{};  // only async_complete is used
    std::shared_ptr<llm::ChatClient> client{};  // chat client (default: chat_client_for(provider))
    async::Runtime* runtime = nullptr;
};

// (index, description); (-1, "") when nothing was chosen. Throws on tool calls, an
// unexpected finish_reason or blank content (session.md §9 select_session). The model
// is asked through `executor`, else `client`, else chat_client_for(provider). An unset
// provider (no field set) means the user session's (Session::to); with neither and no
// executor or client, std::invalid_argument before anything is asked.
std::pair<int, std::string> select_session(const Session& user, const Session& agent,
                                           const std::vector<std::string>& descriptions, const llm::Provider& provider,
                                           std::shared_ptr<LoopExecutor> executor = nullptr,
                                           std::shared_ptr<llm::ChatClient> client = nullptr);
[[nodiscard]] boost::asio::awaitable<std::pair<int, std::string>> async_select_session(
    Session user, Session agent, std::vector<std::string> descriptions, llm::Provider provider,
    std::shared_ptr<LoopExecutor> executor = nullptr, std::shared_ptr<llm::ChatClient> client = nullptr);

class SelectorImpl : public Workflow {
public:
    explicit SelectorImpl(llm::Provider provider, SelectorOptions options = {});

    // Blocks until the model has answered (it must read the session).
    std::shared_ptr<Workflow> select(const Session& session, std::span<const std::shared_ptr<Workflow>> candidates);
    std::shared_ptr<Workflow> select(const Session& session, std::initializer_list<std::shared_ptr<Workflow>> candidates) {
        std::vector<std::shared_ptr<Workflow>> v(candidates);
        return select(session, std::span<const std::shared_ptr<Workflow>>(v));
    }
    [[nodiscard]] boost::asio::awaitable<std::shared_ptr<Workflow>> async_select(
        Session session, std::vector<std::shared_ptr<Workflow>> candidates);

    // A Selector routes; it does not transform. forward() returns its input unchanged.
    Session forward(Session input) override { return input; }
    std::shared_ptr<Workflow> clone() const override;
    std::string type_name() const override { return "Selector"; }
    const std::shared_ptr<AgentParam>& agent() const noexcept { return agent_; }

private:
    SelectorOptions options_;
    std::shared_ptr<AgentParam> agent_;
};

class Selector : public ModuleHolder<SelectorImpl> {
public:
    using ModuleHolder<SelectorImpl>::ModuleHolder;
    Selector(llm::Provider provider, SelectorOptions options = {})
        : ModuleHolder<SelectorImpl>(std::make_shared<SelectorImpl>(std::move(provider), std::move(options))) {}
};

}  // namespace rath::flow
