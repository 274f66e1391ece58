#include <rath/async/admission.hpp>

#include <utility>

namespace rath::async {

Admission::Admission(std::size_t limit) : limit_(limit == 0 ? 1 : limit) {}

// Runs a start that holds a place; a start that throws gives its place to the next in line.
bool Admission::run(Start& start) {
    try {
        return start();
    } catch (...) {
        leave();
        throw;
    }
}

void Admission::enter(Start start) {
    {
        std::lock_guard lk(mu_);
        if (active_ >= limit_) {
            queue_.push_back(std::move(start));
            return;
        }
        ++active_;
    }
    if (!run(start)) leave();
}

void Admission::leave() {
    // A loop, not recursion: many queued functions may give their place back in a row.
    for (;;) {
        Start next;
        {
            std::lock_guard lk(mu_);
            if (queue_.empty()) {
                if (active_ > 0) --active_;
                return;
            }
            next = std::move(queue_.front());  // the place passes straight to it: active_ stays
            queue_.pop_front();
        }
        if (run(next)) return;
    }
}

std::size_t Admission::active() const {
    std::lock_guard lk(mu_);
    return active_;
}

std::size_t Admission::waiting() const {
    std::lock_guard lk(mu_);
    return queue_.size();
}

}  // namespace rath::async
