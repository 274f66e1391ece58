#include <rath/session/registry.hpp>

#include "lib/session/session_state.hpp"

#include <algorithm>
#include <functional>
#include <utility>

namespace rath {

namespace {
constexpr std::size_t npos = static_cast<std::size_t>(-1);
std::size_t hash_id(std::string_view id) noexcept { return std::hash<std::string_view>{}(id); }
}  // namespace

template <class Match>
std::size_t SessionRegistry::probe(std::size_t hash, Match match) const noexcept {
    if (slots_.empty()) return npos;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.is_empty()) return npos;
        if (s.state && match(s)) return i;
    }
}

std::size_t SessionRegistry::find(std::string_view id, std::size_t hash) const noexcept {
    return probe(hash, [&](const Slot& s) { return s.hash == hash && s.state->id == id; });
}

void SessionRegistry::rebuild() {
    std::size_t cap = 64;
    while (cap < (used_ + 1) * 2) cap *= 2;
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(cap));
    used_ = tombs_ = 0;
    for (Slot& s : old)
        if (s.state) insert(std::move(s));
}

void SessionRegistry::insert(Slot slot) {
    // Keep live entries plus tombstones under 3/4 of the table so that probes end.
    if ((used_ + tombs_ + 1) * 4 > slots_.size() * 3) rebuild();
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = slot.hash & mask;
    while (slots_[i].state) i = (i + 1) & mask;  // a tombstone is reused
    if (slots_[i].is_tomb()) --tombs_;
    slots_[i] = std::move(slot);
    ++used_;
}

void SessionRegistry::erase_at(std::size_t i) noexcept {
    const std::size_t mask = slots_.size() - 1;
    slots_[i] = Slot{};
    --used_;
    if (!slots_[(i + 1) & mask].is_empty()) {
        slots_[i].seq = tomb;  // a probe may run through here to a later entry
        ++tombs_;
    } else {
        // Nothing runs past an empty slot: the tombstones right before it can go too.
        for (std::size_t j = (i - 1) & mask; slots_[j].is_tomb(); j = (j - 1) & mask) {
            slots_[j].seq = 0;
            --tombs_;
        }
    }
    // A fan-out's worth of entries gone: give the table back.
    if (slots_.size() > 64 && used_ * 8 < slots_.size()) rebuild();
}

void SessionRegistry::register_session(const Session& s) {
    detail::SessionState* st = &detail::SessionAccess::state(s);
    auto& mark = st->registry_epoch;
    // Registered since the last clear(): its entry is in the table (an agent session is
    // registered again on every run, and then costs no lookup).
    if (mark.load(std::memory_order_acquire) == epoch_.load(std::memory_order_acquire)) return;
    const std::string_view id = s.id();
    const std::size_t hash = hash_id(id);
    std::lock_guard lk(mu_);
    if (const std::size_t i = find(id, hash); i != npos) {
        Slot& e = slots_[i];
        if (e.state != st) {
            // Same id, another session: it takes the entry's place (a dict assignment),
            // keyed by its own id string now. The displaced state is alive (were it
            // being destroyed, its destructor would be waiting for mu_ to erase this
            // entry), so its mark can be cleared: it is no longer in the table.
            e.state->registry_epoch.store(0, std::memory_order_release);
            e.state = st;
            e.session = WeakSession(s);
        }
    } else {
        insert(Slot{hash, st, next_seq_++, WeakSession(s)});
    }
    mark.store(epoch_.load(std::memory_order_relaxed), std::memory_order_release);
}

void SessionRegistry::forget(const detail::SessionState* state, std::string_view id) noexcept {
    const std::size_t hash = hash_id(id);
    std::lock_guard lk(mu_);
    // By state, not by id: a session that took this id's entry keeps it.
    if (const std::size_t i = probe(hash, [state](const Slot& s) { return s.state == state; }); i != npos) erase_at(i);
}

std::optional<Session> SessionRegistry::get(std::string_view id) const {
    const std::size_t hash = hash_id(id);
    std::lock_guard lk(mu_);
    const std::size_t i = find(id, hash);
    if (i == npos) return std::nullopt;
    return slots_[i].session.lock();
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
        live.reserve(used_);
        for (const Slot& e : slots_)
            if (e.state)
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
    for (const Slot& e : slots_) n += e.state && !e.session.expired() ? 1 : 0;
    return n;
}

std::size_t SessionRegistry::capacity() const {
    std::lock_guard lk(mu_);
    return slots_.size();
}

void SessionRegistry::clear() {
    std::lock_guard lk(mu_);
    slots_.clear();
    used_ = tombs_ = 0;
    active_.reset();
    epoch_.fetch_add(1, std::memory_order_acq_rel);
}

SessionRegistry& session_registry() {
    static SessionRegistry* r = new SessionRegistry;  // never destroyed (see the header)
    return *r;
}

}  // namespace rath
