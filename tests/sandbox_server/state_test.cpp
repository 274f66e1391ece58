#include "state.hpp"

#include <doctest/doctest.h>

using namespace rath::sandbox_server;

TEST_CASE("a sandbox goes Pending, Running, Pausing, Paused, Resuming, Running, Stopping, Terminated") {
    State s = State::pending;
    for (auto [e, want] : {std::pair{Event::started, State::running}, {Event::pause_requested, State::pausing},
                           {Event::paused, State::paused}, {Event::resume_requested, State::resuming},
                           {Event::resumed, State::running}, {Event::stop_requested, State::stopping},
                           {Event::stopped, State::terminated}}) {
        auto next = transition(s, e);
        REQUIRE(next.has_value());
        CHECK(*next == want);
        s = *next;
    }
    CHECK(is_final(s));
}

TEST_CASE("pausing anything but a Running sandbox and resuming anything but a Paused one are conflicts") {
    for (State s : {State::pending, State::pausing, State::paused, State::resuming, State::stopping, State::terminated,
                    State::failed})
        CHECK_FALSE(transition(s, Event::pause_requested).has_value());
    for (State s : {State::pending, State::running, State::pausing, State::resuming, State::stopping, State::terminated,
                    State::failed})
        CHECK_FALSE(transition(s, Event::resume_requested).has_value());
}

TEST_CASE("a failed freeze puts a Pausing sandbox back to Running") {
    CHECK(transition(State::pausing, Event::pause_failed) == State::running);
    CHECK_FALSE(transition(State::running, Event::pause_failed).has_value());
}

TEST_CASE("any live state can be stopped, final states cannot, and a second stop is a conflict") {
    for (State s : {State::pending, State::running, State::pausing, State::paused, State::resuming})
        CHECK(transition(s, Event::stop_requested) == State::stopping);
    CHECK_FALSE(transition(State::stopping, Event::stop_requested).has_value());
    CHECK_FALSE(transition(State::terminated, Event::stop_requested).has_value());
    CHECK_FALSE(transition(State::failed, Event::stop_requested).has_value());
}

TEST_CASE("a crash fails a live sandbox but completes one that is being stopped") {
    CHECK(transition(State::running, Event::crashed) == State::failed);
    CHECK(transition(State::paused, Event::crashed) == State::failed);
    CHECK(transition(State::stopping, Event::crashed) == State::terminated);
    CHECK_FALSE(transition(State::terminated, Event::crashed).has_value());
    CHECK(transition(State::pending, Event::start_failed) == State::failed);
    CHECK_FALSE(transition(State::running, Event::start_failed).has_value());
}

TEST_CASE("state names are the API's spellings and unknown names parse to nothing") {
    CHECK(to_string(State::pending) == "Pending");
    CHECK(to_string(State::terminated) == "Terminated");
    CHECK(parse_state("Paused") == State::paused);
    CHECK_FALSE(parse_state("paused").has_value());
    CHECK_FALSE(parse_state("Hibernating").has_value());
}
