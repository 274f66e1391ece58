#include <rath/async/strand.hpp>

#include <optional>
#include <vector>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace rath::async {

namespace detail {
// FIFO of lane waiters. Not a std::deque: libstdc++'s allocates ~600 bytes even when
// empty, and a fan-out creates a lane per session that almost never has a waiter.
class WaiterQueue {
public:
    bool empty() const noexcept { return head_ == items_.size(); }
    void push_back(Lazy<void> w) { items_.push_back(std::move(w)); }
    Lazy<void> pop_front() {
        Lazy<void> w = std::move(items_[head_++]);
        if (head_ == items_.size()) {
            items_.clear();
            head_ = 0;
        } else if (head_ >= 32 && head_ * 2 >= items_.size()) {
            items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
            head_ = 0;
        }
        return w;
    }
    // Removes the first waiter holding the same ticket, if queued.
    void remove(const Lazy<void>& ticket) {
        for (auto it = items_.begin() + static_cast<std::ptrdiff_t>(head_); it != items_.end(); ++it)
            if (it->same_as(ticket)) {
                items_.erase(it);
                return;
            }
    }

private:
    std::vector<Lazy<void>> items_;
    std::size_t head_ = 0;
};
}  // namespace detail

struct KeyedStrands::Entry {
    const std::string* key = nullptr;  // the map node's own key (stable: node-based)
    std::optional<strand_type> strand;  // made on first use when ops run inline
    std::size_t leases = 0;
    bool locked = false;
    detail::WaiterQueue waiters;
};

struct KeyedStrands::Registry {
    Registry(executor_type e, bool inline_ops) : ex(e), inline_ops(inline_ops) {}
    executor_type ex;
    const bool inline_ops;
    std::mutex mu;
    // Found by string_view: a lookup does not copy the key.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
    };
    // Node-based: Entry addresses (and their keys) stay valid until erased.
    std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>> entries;

    void maybe_erase_locked(Entry* e) {
        if (e->leases == 0 && !e->locked && e->waiters.empty()) entries.erase(*e->key);
    }
};

KeyedStrands::KeyedStrands(executor_type ex, bool inline_ops) : reg_(std::make_shared<Registry>(ex, inline_ops)) {}
KeyedStrands::~KeyedStrands() = default;

template <class Key>
KeyedStrands::Lease KeyedStrands::acquire_key(Key&& key) {
    std::lock_guard lk(reg_->mu);
    auto it = reg_->entries.find(std::string_view(key));
    if (it == reg_->entries.end()) {
        std::optional<strand_type> strand;
        if (!reg_->inline_ops) strand.emplace(boost::asio::make_strand(reg_->ex));
        it = reg_->entries.emplace(std::string(std::forward<Key>(key)), Entry{nullptr, std::move(strand), 0, false, {}})
                 .first;
        it->second.key = &it->first;
    }
    ++it->second.leases;
    return Lease(reg_, &it->second);
}

KeyedStrands::Lease KeyedStrands::acquire(std::string_view key) { return acquire_key(key); }
KeyedStrands::Lease KeyedStrands::acquire(std::string&& key) { return acquire_key(std::move(key)); }

std::size_t KeyedStrands::size() const {
    std::lock_guard lk(reg_->mu);
    return reg_->entries.size();
}

KeyedStrands::Lease::Lease(Lease&& o) noexcept
    : reg_(std::move(o.reg_)),
      entry_(std::exchange(o.entry_, nullptr)),
      locked_(std::exchange(o.locked_, false)),
      ticket_(std::exchange(o.ticket_, std::nullopt)) {}

KeyedStrands::Lease& KeyedStrands::Lease::operator=(Lease&& o) noexcept {
    if (this != &o) {
        release();
        reg_ = std::move(o.reg_);
        entry_ = std::exchange(o.entry_, nullptr);
        locked_ = std::exchange(o.locked_, false);
        ticket_ = std::exchange(o.ticket_, std::nullopt);
    }
    return *this;
}

KeyedStrands::Lease::~Lease() { release(); }

const KeyedStrands::strand_type& KeyedStrands::Lease::strand() const {
    if (!entry_) throw std::logic_error("KeyedStrands::Lease is empty");
    std::lock_guard lk(reg_->mu);
    if (!entry_->strand) entry_->strand.emplace(boost::asio::make_strand(reg_->ex));
    return *entry_->strand;
}

bool KeyedStrands::Lease::runs_inline() const {
    if (!entry_) throw std::logic_error("KeyedStrands::Lease is empty");
    return reg_->inline_ops && reg_->ex.running_in_this_thread();
}

const std::string& KeyedStrands::Lease::key() const {
    if (!entry_) throw std::logic_error("KeyedStrands::Lease is empty");
    return *entry_->key;
}

Lazy<void> KeyedStrands::Lease::request_lock() {
    if (!entry_) throw std::logic_error("KeyedStrands::Lease is empty");
    Lazy<void> granted;
    std::lock_guard lk(reg_->mu);
    if (locked_) throw std::logic_error("KeyedStrands::Lease locked twice");
    locked_ = true;
    ticket_ = granted;
    if (!entry_->locked) {
        entry_->locked = true;
        granted.set_value();
    } else {
        entry_->waiters.push_back(granted);
    }
    return granted;
}

void KeyedStrands::Lease::unlock() {
    if (!entry_ || !locked_) return;
    std::unique_lock lk(reg_->mu);
    locked_ = false;
    Lazy<void> ticket = std::move(*ticket_);
    ticket_.reset();
    if (!ticket.ready()) {
        // Still queued (the waiter went away before its turn): leave the queue, the
        // lane is someone else's.
        entry_->waiters.remove(ticket);
        return;
    }
    if (!entry_->waiters.empty()) {
        // Hand the lane straight to the next waiter: it stays locked.
        Lazy<void> next = entry_->waiters.pop_front();
        lk.unlock();
        next.set_value();
    } else {
        entry_->locked = false;
    }
}

void KeyedStrands::Lease::release() noexcept {
    if (!entry_) return;
    unlock();
    std::lock_guard lk(reg_->mu);
    --entry_->leases;
    reg_->maybe_erase_locked(entry_);
    entry_ = nullptr;
}

}  // namespace rath::async
