#pragma once
// Compressor (memory_flow.md §4.5): a workflow that rewrites a transcript into one USER
// row with one LLM call (run_session_compress). Thread safety, cancellation and errors:
// those of run_session_compress (loop/session_compress.hpp).
#include <rath/flow/module_holder.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/loop/session_compress.hpp>

#include <memory>
#include <string>

namespace rath::flow {

struct CompressorOptions {
    llm::Provider provider{};
    StreamCallback on_event{};
    std::string description{};
    std::shared_ptr<LoopExecutor> executor{};
    std::shared_ptr<llm::ChatClient> client{};  // default: chat_client_for(provider)
    async::Runtime* runtime = nullptr;
};

class CompressorImpl : public Workflow {
public:
    explicit CompressorImpl(std::string compress_instruction = default_compress_instruction,
                            CompressorOptions options = {});
    Session forward(Session input) override;
    [[nodiscard]] boost::asio::awaitable<Session> async_forward(Session input) override;
    std::shared_ptr<Workflow> clone() const override;
    std::string type_name() const override { return "Compressor"; }
    const std::shared_ptr<AgentParam>& agent() const noexcept { return agent_; }

private:
    CompressOptions compress_options() const;
    std::string instruction_;
    CompressorOptions options_;
    std::shared_ptr<AgentParam> agent_;
};

class Compressor : public ModuleHolder<CompressorImpl> {
public:
    using ModuleHolder<CompressorImpl>::ModuleHolder;
    Compressor(std::string compress_instruction, CompressorOptions options = {})
        : ModuleHolder<CompressorImpl>(
              std::make_shared<CompressorImpl>(std::move(compress_instruction), std::move(options))) {}
};

}  // namespace rath::flow
