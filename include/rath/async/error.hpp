#pragma once
// Errors raised by the async runtime itself.
#include <rath/error.hpp>

namespace rath::async {

// A blocking wait was requested on a runtime thread, where it could deadlock the
// very thread that has to produce the value. co_await the operation instead.
class DeadlockError : public Error {
public:
    using Error::Error;
};

// Work was submitted to (or was still pending in) a runtime that has shut down.
class RuntimeShutdownError : public Error {
public:
    using Error::Error;
};

// A deadline expired before the operation completed.
class TimeoutError : public Error {
public:
    using Error::Error;
};

// The operation was cancelled (TaskGroup::cancel, Lazy::cancel, Runtime::drain,
// shutdown): the same type as rath::Cancelled (rath/error.hpp), so that one catch
// covers cancellation raised by any layer.
using CancelledError = rath::Cancelled;

}  // namespace rath::async
