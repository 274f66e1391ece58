#include <rath/session/registry.hpp>

namespace rath {

void SessionRegistry::register_session(const Session& s) {
    std::lock_guard lk(mu_);
    auto it = index_.find(s.id());
    if (it != index_.end()) {
        order_[it->second] = s;  // same id: keeps its position (a dict assignment)
        return;
    }
    index_.emplace(s.id(), order_.size());
    order_.push_back(s);
}

std::optional<Session> SessionRegistry::get(std::string_view id) const {
    std::lock_guard lk(mu_);
    auto it = index_.find(std::string(id));
    if (it == index_.end()) return std::nullopt;
    return order_[it->second];
}

void SessionRegistry::set_active(const std::optional<Session>& s) {
    std::lock_guard lk(mu_);
    if (s)
        active_ = s->id();
    else
        active_.reset();
}

std::optional<std::string> SessionRegistry::active_id() const {
    std::lock_guard lk(mu_);
    return active_;
}

std::vector<Session> SessionRegistry::sessions() const {
    std::lock_guard lk(mu_);
    return order_;
}

std::size_t SessionRegistry::size() const {
    std::lock_guard lk(mu_);
    return order_.size();
}

void SessionRegistry::clear() {
    std::vector<Session> drop;
    {
        std::lock_guard lk(mu_);
        drop.swap(order_);
        index_.clear();
        active_.reset();
    }
    // Sessions are destroyed outside the lock (a destructor may report a dropped error).
}

SessionRegistry& session_registry() {
    static SessionRegistry r;
    return r;
}

}  // namespace rath
