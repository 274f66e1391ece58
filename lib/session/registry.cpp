#include <rath/session/registry.hpp>

#include <algorithm>

namespace rath {

void SessionRegistry::register_session(const Session& s) {
    std::lock_guard lk(mu_);
    auto it = index_.find(s.id());
    if (it != index_.end()) {
        order_[it->second].session = WeakSession(s);  // same id: keeps its position (a dict assignment)
        return;
    }
    if (order_.size() >= prune_at_) prune_locked();
    order_.push_back(Entry{s.id(), WeakSession(s)});
    index_.emplace(order_.back().id, order_.size() - 1);
}

// Drops dead entries; the next prune happens when the registry has doubled, so the
// cost stays O(1) per registration.
void SessionRegistry::prune_locked() {
    std::erase_if(order_, [](const Entry& e) { return e.session.expired(); });
    index_.clear();
    for (std::size_t i = 0; i < order_.size(); ++i) index_.emplace(order_[i].id, i);
    prune_at_ = std::max<std::size_t>(1024, order_.size() * 2);
}

std::optional<Session> SessionRegistry::get(std::string_view id) const {
    std::lock_guard lk(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    return order_[it->second].session.lock();
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
    std::vector<Session> out;
    out.reserve(order_.size());
    for (const auto& e : order_)
        if (auto s = e.session.lock()) out.push_back(std::move(*s));
    return out;
}

std::size_t SessionRegistry::size() const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (const auto& e : order_) n += e.session.expired() ? 0 : 1;
    return n;
}

void SessionRegistry::clear() {
    std::lock_guard lk(mu_);
    order_.clear();
    index_.clear();
    active_.reset();
    prune_at_ = 1024;
}

SessionRegistry& session_registry() {
    static SessionRegistry r;
    return r;
}

}  // namespace rath
