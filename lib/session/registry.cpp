#include <rath/session/registry.hpp>

#include <algorithm>

namespace rath {

void SessionRegistry::register_session(const Session& s) {
    detail::SessionState* st = detail::state_of(s);
    auto& mark = detail::registered_epoch(*st);
    // Registered since the last clear(): its entry is in the map (an agent session is
    // registered again on every run, and then costs no lookup).
    if (mark.load(std::memory_order_acquire) == epoch_.load(std::memory_order_acquire)) return;
    const std::string_view id = s.id();  // the state's own string: the key views it
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) {
        if (it->second.state != st) {
            // Same id, another session: it takes the entry's place (a dict assignment),
            // keyed by its own id string now. The displaced state is alive (were it
            // being destroyed, its destructor would be waiting for mu_ to erase this
            // entry), so its mark can be cleared: it is no longer in the map.
            detail::registered_epoch(*it->second.state).store(0, std::memory_order_release);
            const std::uint64_t seq = it->second.seq;
            entries_.erase(it);
            entries_.emplace(id, Entry{seq, WeakSession(s), st});
        }
    } else {
        entries_.emplace(id, Entry{next_seq_++, WeakSession(s), st});
    }
    mark.store(epoch_.load(std::memory_order_relaxed), std::memory_order_release);
}

void SessionRegistry::forget(const detail::SessionState* state, std::string_view id) noexcept {
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(id); it != entries_.end() && it->second.state == state) entries_.erase(it);
}

std::optional<Session> SessionRegistry::get(std::string_view id) const {
    std::lock_guard lk(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return std::nullopt;
    return it->second.session.lock();
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
    std::vector<std::pair<std::uint64_t, Session>> live;
    {
        std::lock_guard lk(mu_);
        live.reserve(entries_.size());
        for (const auto& [id, e] : entries_)
            if (auto s = e.session.lock()) live.emplace_back(e.seq, std::move(*s));
    }
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Session> out;
    out.reserve(live.size());
    for (auto& [seq, s] : live) out.push_back(std::move(s));
    return out;
}

std::size_t SessionRegistry::size() const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (const auto& [id, e] : entries_) n += e.session.expired() ? 0 : 1;
    return n;
}

void SessionRegistry::clear() {
    std::lock_guard lk(mu_);
    entries_.clear();
    active_.reset();
    epoch_.fetch_add(1, std::memory_order_acq_rel);
}

SessionRegistry& session_registry() {
    static SessionRegistry* r = new SessionRegistry;  // never destroyed (see the header)
    return *r;
}

}  // namespace rath
