#include <rath/flow/compressor.hpp>

namespace rath::flow {

Compressor::Compressor(std::string compress_instruction, CompressorOptions options)
    : Workflow(options.description), instruction_(std::move(compress_instruction)), options_(std::move(options)) {
    agent_ = register_param("agent", std::make_shared<AgentParam>(
                                         AgentParam{Session::from_agent_prompt(instruction_), options_.provider}));
}

CompressOptions Compressor::compress_options() const {
    CompressOptions o;
    o.provider = agent_->provider;
    o.executor = options_.executor;
    o.client = options_.client;
    o.on_event = options_.on_event;
    o.runtime = options_.runtime;
    // The instruction is the agent prompt; the trailing user message uses the default.
    return o;
}

Session Compressor::forward(Session input) {
    return run_session_compress(input, agent_->agent_session, compress_options());
}

boost::asio::awaitable<Session> Compressor::async_forward(Session input) {
    // Named, not temporaries inside the co_await expression (see Agent::async_forward).
    CompressOptions options = compress_options();
    Session agent_session = agent_->agent_session;
    co_return co_await async_run_session_compress(std::move(input), std::move(agent_session), std::move(options));
}

}  // namespace rath::flow
