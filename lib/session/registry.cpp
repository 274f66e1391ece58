#include <rath/session/registry.hpp>

#include <algorithm>

namespace rath {

void SessionRegistry::register_session(const Session& s) {
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(std::string_view(s.id())); it != entries_.end()) {
        it->second.session = WeakSession(s);  // same id: keeps its position (a dict assignment)
        return;
    }
    if (entries_.size() >= prune_at_) prune_locked();
    entries_.emplace(s.id(), Entry{next_seq_++, WeakSession(s)});
}

// Drops dead entries; the next prune happens when the registry has doubled, so the
// cost stays O(1) per registration.
void SessionRegistry::prune_locked() {
    std::erase_if(entries_, [](const auto& kv) { return kv.second.session.expired(); });
    prune_at_ = std::max<std::size_t>(1024, entries_.size() * 2);
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
    prune_at_ = 1024;
}

SessionRegistry& session_registry() {
    static SessionRegistry r;
    return r;
}

}  // namespace rath
