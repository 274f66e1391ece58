#include <rath/llm/error.hpp>

namespace rath {
namespace {
std::string describe(const ProviderErrorInfo& i) {
    std::string s = i.provider.empty() ? std::string("provider") : i.provider;
    if (i.status > 0) s += ": HTTP " + std::to_string(i.status);
    if (!i.type.empty()) s += " " + i.type;
    s += ": " + (i.message.empty() ? std::string("(no message)") : i.message);
    if (!i.request_id.empty()) s += " (request id " + i.request_id + ")";
    return s;
}
}  // namespace

ProviderError::ProviderError(ProviderErrorInfo info) : Error(describe(info)), info_(std::move(info)) {}
ProviderError::ProviderError(ProviderErrorInfo info, std::string what)
    : Error(std::move(what)), info_(std::move(info)) {}

bool ProviderError::retryable() const noexcept {
    if (info_.should_retry) return *info_.should_retry;
    if (dynamic_cast<const StreamError*>(this) || dynamic_cast<const ResponseFormatError*>(this)) return false;
    if (dynamic_cast<const ProviderConnectionError*>(this)) return true;
    const int s = info_.status;
    return s == 408 || s == 409 || s == 429 || s >= 500;
}

}  // namespace rath
