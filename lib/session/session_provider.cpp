// The session's provider binding (session.md §9): a value, no lifecycle.
#include <rath/session.hpp>

#include <rath/llm/provider.hpp>

#include "lib/session/session_state.hpp"

namespace rath {

Session& Session::to(const llm::Provider& provider) {
    auto p = std::make_shared<const llm::Provider>(provider);
    std::lock_guard lk(st_->mu);
    st_->provider = std::move(p);
    return *this;
}

Session& Session::to_provider(std::string_view name) { return to(llm::Provider::from_config(name)); }

Session& Session::clear_provider() {
    std::shared_ptr<const llm::Provider> old;  // freed outside the lock
    std::lock_guard lk(st_->mu);
    old = std::move(st_->provider);
    return *this;
}

std::shared_ptr<const llm::Provider> Session::provider() const {
    std::lock_guard lk(st_->mu);
    return st_->provider;
}

}  // namespace rath
