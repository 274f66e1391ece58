#pragma once
// Root of rath's exception hierarchy. Every public sync call throws a rath::Error
// (or a subclass defined next to the component that raises it); coroutine callers
// see the same exceptions through co_await.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace rath {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Why a piece of work was cancelled.
enum class CancelReason : std::uint8_t {
    requested = 1,  // someone asked: Session::cancel(), Lazy::cancel(), TaskGroup::cancel(),
                    // a cancelled awaiting coroutine, a service's DELETE or a dropped client
    deadline,       // the run's own deadline (LoopOptions::deadline) expired
    shutdown,       // the runtime stopped it: Runtime::drain() / shutdown() ran out of time
};

// The string form used in messages, logs and metrics: "requested", "deadline", "shutdown".
inline const char* to_string(CancelReason r) noexcept {
    switch (r) {
        case CancelReason::deadline: return "deadline";
        case CancelReason::shutdown: return "shutdown";
        default: return "requested";
    }
}

// The work was cancelled before it finished. One type for every layer: the async
// layer calls it rath::async::CancelledError (an alias, not a subclass), so an HTTP
// request, a TaskGroup child and a session run that were cancelled are all caught as
// rath::Cancelled. The reader of a cancelled Session gets one, with the reason, and
// the session then reads as what its run had published before it stopped.
class Cancelled : public Error {
public:
    explicit Cancelled(const std::string& message, CancelReason reason = CancelReason::requested)
        : Error(message), reason_(reason) {}
    [[nodiscard]] CancelReason reason() const noexcept { return reason_; }

private:
    CancelReason reason_;
};

}  // namespace rath
