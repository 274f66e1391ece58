#pragma once
// Compressor (memory_flow.md §4.5): a workflow that rewrites a transcript into one
// USER row with one LLM call (run_session_compress).
#include <rath/flow/workflow.hpp>
#include <rath/session_compress.hpp>

namespace rath::flow {

struct CompressorOptions {
    llm::Provider provider{};
    StreamCallback on_event{};
    std::string description{};
    std::shared_ptr<LoopExecutor> executor{};
    std::shared_ptr<llm::ChatClient> client{};  // chat client (default: chat_client_for(provider))
    async::Runtime* runtime = nullptr;
};

class Compressor : public Workflow {
public:
    explicit Compressor(std::string compress_instruction = default_compress_instruction, CompressorOptions options = {});
    Session forward(Session input) override;
    boost::asio::awaitable<Session> async_forward(Session input) override;
    std::string type_name() const override { return "Compressor"; }
    const std::shared_ptr<AgentParam>& agent() const noexcept { return agent_; }

private:
    CompressOptions compress_options() const;
    std::string instruction_;
    CompressorOptions options_;
    std::shared_ptr<AgentParam> agent_;
};

}  // namespace rath::flow
