#include <rath/llm/sampling.hpp>

namespace rath::llm {

namespace {
// Calls f(mine, theirs) for every optional field, in declaration order: the one list
// the two merges below follow.
template <class F>
void each_optional(SamplingOptions& a, const SamplingOptions& b, F&& f) {
    f(a.tool_choice, b.tool_choice);
    f(a.parallel_tool_calls, b.parallel_tool_calls);
    f(a.response_format, b.response_format);
    f(a.temperature, b.temperature);
    f(a.top_p, b.top_p);
    f(a.max_completion_tokens, b.max_completion_tokens);
    f(a.max_tokens, b.max_tokens);
    f(a.stop, b.stop);
    f(a.n, b.n);
    f(a.seed, b.seed);
    f(a.frequency_penalty, b.frequency_penalty);
    f(a.presence_penalty, b.presence_penalty);
    f(a.logit_bias, b.logit_bias);
    f(a.logprobs, b.logprobs);
    f(a.top_logprobs, b.top_logprobs);
    f(a.reasoning_effort, b.reasoning_effort);
    f(a.verbosity, b.verbosity);
    f(a.metadata, b.metadata);
    f(a.user, b.user);
    f(a.store, b.store);
    f(a.service_tier, b.service_tier);
}
}  // namespace

void SamplingOptions::fill_unset_from(const SamplingOptions& defaults) {
    each_optional(*this, defaults, [](auto& mine, const auto& theirs) {
        if (!mine && theirs) mine = theirs;
    });
    for (const auto& kv : defaults.extra_create_args)
        if (!extra_create_args.contains(kv.key())) extra_create_args[kv.key()] = kv.value();
}

void SamplingOptions::take_set_from(const SamplingOptions& overrides) {
    each_optional(*this, overrides, [](auto& mine, const auto& theirs) {
        if (theirs) mine = theirs;
    });
    for (const auto& kv : overrides.extra_create_args) extra_create_args[kv.key()] = kv.value();
}

}  // namespace rath::llm
