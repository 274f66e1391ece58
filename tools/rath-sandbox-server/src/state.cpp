#include "state.hpp"

#include <array>

namespace rath::sandbox_server {

namespace {
constexpr std::array<std::string_view, 8> names = {"Pending", "Running",  "Pausing",    "Paused",
                                                   "Resuming", "Stopping", "Terminated", "Failed"};
}

std::string_view to_string(State s) noexcept { return names[static_cast<std::size_t>(s)]; }

std::optional<State> parse_state(std::string_view s) noexcept {
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == s) return static_cast<State>(i);
    return std::nullopt;
}

std::optional<State> transition(State s, Event e) noexcept {
    using S = State;
    switch (e) {
        case Event::started:
            if (s == S::pending) return S::running;
            break;
        case Event::start_failed:
            if (s == S::pending) return S::failed;
            break;
        case Event::pause_requested:
            if (s == S::running) return S::pausing;
            break;
        case Event::paused:
            if (s == S::pausing) return S::paused;
            break;
        case Event::pause_failed:
            if (s == S::pausing) return S::running;
            break;
        case Event::resume_requested:
            if (s == S::paused) return S::resuming;
            break;
        case Event::resumed:
            if (s == S::resuming) return S::running;
            break;
        case Event::stop_requested:
            // A sandbox may be stopped from any live state, including while it is still
            // starting or between pause and resume (the runtime finishes the step first).
            if (!is_final(s) && s != S::stopping) return S::stopping;
            break;
        case Event::stopped:
            if (s == S::stopping) return S::terminated;
            break;
        case Event::crashed:
            if (!is_final(s) && s != S::stopping) return S::failed;
            if (s == S::stopping) return S::terminated;  // dying while being stopped is the stop
            break;
    }
    return std::nullopt;
}

}  // namespace rath::sandbox_server
