#include <rath/flow/compressor.hpp>

namespace rath::flow {

CompressorImpl::CompressorImpl(std::string compress_instruction, CompressorOptions options)
    : Workflow(options.description), instruction_(std::move(compress_instruction)), options_(std::move(options)) {
    agent_ = register_param("agent", std::make_shared<AgentParam>(
                                         AgentParam{Session::from_agent_prompt(instruction_), options_.provider}));
}

CompressOptions CompressorImpl::compress_options() const {
    CompressOptions o;
    o.provider = agent_->provider;
    o.executor = options_.executor;
    o.client = options_.client;
    o.on_event = options_.on_event;
    o.runtime = options_.runtime;
    // The instruction is the agent prompt; the trailing user message uses the default.
    return o;
}

Session CompressorImpl::forward(Session input) {
    return run_session_compress(input, agent_->agent_session, compress_options());
}

boost::asio::awaitable<Session> CompressorImpl::async_forward(Session input) {
    // Named, not temporaries inside the co_await expression (see AgentImpl::async_forward).
    CompressOptions options = compress_options();
    Session agent_session = agent_->agent_session;
    co_return co_await async_run_session_compress(std::move(input), std::move(agent_session), std::move(options));
}

std::shared_ptr<Workflow> CompressorImpl::clone() const {
    auto copy = std::make_shared<CompressorImpl>(instruction_, options_);
    copy->set_description(description());
    *copy->agent_ = *agent_;
    return copy;
}

}  // namespace rath::flow
