#pragma once
// Collects what rath logs (rath/log.hpp) for one scope, instead of letting it reach
// stderr, so that a test can assert on the records; the previous sink comes back at
// scope exit. Records may arrive from runtime threads while the test reads.
#include <rath/log.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rath::test {

class LogCapture {
public:
    struct Entry {
        LogLevel level;
        std::string channel;
        std::string message;
    };

    // The records live in shared state: a runtime thread may still be inside the
    // sink when the capture goes out of scope.
    LogCapture() : state_(std::make_shared<State>()) {
        prev_ = rath::set_log_sink([state = state_](const LogRecord& r) {
            std::lock_guard lk(state->mu);
            state->entries.push_back({r.level, std::string(r.channel), std::string(r.message)});
        });
    }
    ~LogCapture() { rath::set_log_sink(std::move(prev_)); }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;

    std::vector<Entry> entries() const {
        std::lock_guard lk(state_->mu);
        return state_->entries;
    }
    // The messages logged on `channel`, in order.
    std::vector<std::string> messages(std::string_view channel) const {
        std::lock_guard lk(state_->mu);
        std::vector<std::string> out;
        for (const auto& e : state_->entries)
            if (e.channel == channel) out.push_back(e.message);
        return out;
    }

private:
    struct State {
        std::mutex mu;
        std::vector<Entry> entries;
    };
    std::shared_ptr<State> state_;
    LogSink prev_;
};

}  // namespace rath::test
