#pragma once
// What a cancelled run's reader sees, for tests of cancellation.
#include <rath/error.hpp>
#include <rath/session.hpp>

#include <optional>

namespace rath::test {

// The reason of the rath::Cancelled the first read of `out` throws (nullopt: it threw
// nothing or something else).
inline std::optional<rath::CancelReason> cancelled_reason(const rath::Session& out) {
    try {
        (void)out.chunks();
    } catch (const rath::Cancelled& c) {
        return c.reason();
    } catch (...) {
    }
    return std::nullopt;
}

}  // namespace rath::test
