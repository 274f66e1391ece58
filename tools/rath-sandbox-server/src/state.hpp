#pragma once
// The sandbox state machine of the OpenSandbox lifecycle API (specs/sandbox-lifecycle.yml,
// SandboxState): which requests and runtime events move a sandbox between states, and
// which are conflicts (HTTP 409). Pure; the caller serialises access to one sandbox.
#include <optional>
#include <string_view>

namespace rath::sandbox_server {

enum class State { pending, running, pausing, paused, resuming, stopping, terminated, failed };

enum class Event {
    started,           // the entry process is up inside its container
    start_failed,      // the container could not be started
    pause_requested,   // POST /pause
    paused,            // the freezer reports the tree frozen
    pause_failed,      // the freezer could not stop the tree (it runs on)
    resume_requested,  // POST /resume
    resumed,           // the tree is thawed
    stop_requested,    // DELETE or expiry
    stopped,           // the container's processes are gone and its resources released
    crashed,           // the entry process died on its own, or the runtime failed
};

// "Pending", "Running", ... as the API spells them.
[[nodiscard]] std::string_view to_string(State s) noexcept;
[[nodiscard]] std::optional<State> parse_state(std::string_view s) noexcept;

// The state after `e`, or nullopt when `e` is not allowed in `s` (a conflict).
[[nodiscard]] std::optional<State> transition(State s, Event e) noexcept;

// Terminated and Failed: nothing runs, only DELETE (which forgets the record) applies.
[[nodiscard]] constexpr bool is_final(State s) noexcept { return s == State::terminated || s == State::failed; }

}  // namespace rath::sandbox_server
