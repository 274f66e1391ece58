#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/flow/selector.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/registry.hpp>
#include <rath/loop/loop_step.hpp>
#include <rath/session/messages.hpp>

#include "lib/loop/effective_provider.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/json.hpp>

#include <regex>
#include <stdexcept>

namespace rath::flow {

namespace asio = boost::asio;

const char* const default_select_instruction =
    "You are a router. Given the conversation and a numbered menu of candidate workflows, reply with the single "
    "best index, or -1 if none applies / the task is already complete.";

asio::awaitable<std::pair<int, std::string>> async_select_session(Session user, Session agent,
                                                                  std::vector<std::string> descriptions,
                                                                  llm::Provider provider,
                                                                  std::shared_ptr<LoopExecutor> executor,
                                                                  std::shared_ptr<llm::ChatClient> client) {
    if (descriptions.empty()) co_return std::pair<int, std::string>{-1, ""};
    if (auto bound = rath::detail::session_provider_for(provider, user, executor || client, "select_session"))
        provider = std::move(*bound);
    co_await user.async_synchronize();
    co_await agent.async_synchronize();
    std::vector<llm::Message> messages = chunk_table_to_messages(agent.chunks());
    auto user_msgs = chunk_table_to_messages(user.chunks());
    messages.insert(messages.end(), user_msgs.begin(), user_msgs.end());
    std::string menu = "Candidate workflows:\n";
    for (std::size_t i = 0; i < descriptions.size(); ++i) {
        if (i) menu += "\n";
        menu += std::to_string(i) + ": " + descriptions[i];
    }
    menu += "\n\nReply with one index, or -1.";
    messages.push_back(llm::Message::user(menu));
    provider.sampling.tool_choice.reset();
    llm::ChatRequest req = make_chat_request(std::move(messages), std::nullopt, provider, "none");
    // Named locals, not temporaries or ?: around co_await: GCC 12 miscompiles both
    // (double destruction of temporaries across the suspension point).
    llm::ChatResponse resp;
    if (executor) {
        co_await executor->async_complete(req, resp);
    } else {
        if (!client) client = llm::chat_client_for(provider);
        co_await client->async_complete(req, resp);
    }
    const auto& choice = resp.primary_choice();
    if (choice.message.tool_calls && !choice.message.tool_calls->empty())
        throw std::runtime_error("select_session: model returned tool calls but tools are disabled");
    auto fr = choice.finish_reason;
    if (!llm::is_final_answer(fr))
        throw std::runtime_error("select_session: unexpected finish_reason=" +
                                 rath::detail::pyrepr(std::string(llm::to_string(fr))));
    const std::string content = choice.message.content.value_or("");
    if (content.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
        throw std::runtime_error("select_session: empty model content");
    static const std::regex number("-?\\d+");
    std::smatch m;
    if (!std::regex_search(content, m, number)) co_return std::pair<int, std::string>{-1, ""};
    long idx = -1;
    try {
        idx = std::stol(m.str());
    } catch (...) {
        co_return std::pair<int, std::string>{-1, ""};
    }
    if (idx < 0 || idx >= static_cast<long>(descriptions.size())) co_return std::pair<int, std::string>{-1, ""};
    co_return std::pair<int, std::string>{static_cast<int>(idx), descriptions[idx]};
}

std::pair<int, std::string> select_session(const Session& user, const Session& agent,
                                           const std::vector<std::string>& descriptions, const llm::Provider& provider,
                                           std::shared_ptr<LoopExecutor> executor,
                                           std::shared_ptr<llm::ChatClient> client) {
    return async::block_on(
        async_select_session(user, agent, descriptions, provider, std::move(executor), std::move(client)));
}

SelectorImpl::SelectorImpl(llm::Provider provider, SelectorOptions options)
    : Workflow(options.description), options_(std::move(options)) {
    agent_ = register_param("agent", std::make_shared<AgentParam>(AgentParam{
                                         Session::from_agent_prompt(options_.select_instruction), std::move(provider)}));
}

std::shared_ptr<Workflow> SelectorImpl::clone() const {
    auto copy = std::make_shared<SelectorImpl>(agent_->provider, options_);
    copy->set_description(description());
    *copy->agent_ = *agent_;
    return copy;
}

asio::awaitable<std::shared_ptr<Workflow>> SelectorImpl::async_select(Session session,
                                                                  std::vector<std::shared_ptr<Workflow>> candidates) {
    if (candidates.empty()) co_return std::make_shared<EmptyWorkflow>();
    std::vector<std::string> descriptions;
    for (auto& c : candidates) descriptions.push_back(c->description());
    // Named copies, not temporaries inside the co_await expression (GCC 12).
    Session agent_session = agent_->agent_session;
    llm::Provider provider = agent_->provider;
    auto executor = options_.executor;
    auto client = options_.client;
    auto [idx, desc] = co_await async_select_session(std::move(session), std::move(agent_session),
                                                     std::move(descriptions), std::move(provider), std::move(executor),
                                                     std::move(client));
    if (idx >= 0 && idx < static_cast<int>(candidates.size())) co_return candidates[idx];
    co_return std::make_shared<EmptyWorkflow>();
}

std::shared_ptr<Workflow> SelectorImpl::select(const Session& session, std::span<const std::shared_ptr<Workflow>> candidates) {
    async::Runtime& rt = options_.runtime ? *options_.runtime : async::Runtime::default_runtime();
    return async::block_on(rt, async_select(session, std::vector<std::shared_ptr<Workflow>>(candidates.begin(),
                                                                                          candidates.end())));
}

}  // namespace rath::flow
