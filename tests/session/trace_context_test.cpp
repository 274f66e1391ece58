// W3C trace context of runs: what counts as a traceparent, a child span, and a
// session's trace context read from its lineage extras.
#include <rath/session.hpp>
#include <rath/session/trace_context.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <string>

namespace json = boost::json;

TEST_SUITE("session/trace_context") {

TEST_CASE("a traceparent is version-traceid-parentid-flags in lowercase hex with neither id all zeros") {
    CHECK(rath::is_valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    CHECK(rath::is_valid_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
    CHECK_FALSE(rath::is_valid_traceparent(""));
    CHECK_FALSE(rath::is_valid_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));  // uppercase
    CHECK_FALSE(rath::is_valid_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));  // version ff
    CHECK_FALSE(rath::is_valid_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
    CHECK_FALSE(rath::is_valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
    CHECK_FALSE(rath::is_valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 "));
    CHECK_FALSE(rath::is_valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b\r\n1"));
}

TEST_CASE("a child span keeps the parent's trace id and flags with a new parent id; without a parent a new trace starts") {
    const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    const std::string child = rath::child_traceparent(parent);
    CHECK(rath::is_valid_traceparent(child));
    CHECK(child.substr(0, 36) == parent.substr(0, 36));
    CHECK(child.substr(36, 16) != parent.substr(36, 16));
    CHECK(child.substr(53) == "00");
    const std::string fresh = rath::child_traceparent(std::nullopt);
    CHECK(rath::is_valid_traceparent(fresh));
    CHECK(fresh.substr(53) == "01");
    CHECK(fresh.substr(3, 32) != rath::child_traceparent("not a traceparent").substr(3, 32));
}

TEST_CASE("a session's trace context is its last traceparent lineage extra when that one is valid") {
    rath::Session s;
    CHECK_FALSE(rath::session_traceparent(s));
    s.add_lineage_extra("traceparent", json::value(42));
    CHECK_FALSE(rath::session_traceparent(s));
    const std::string tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    s.add_lineage_extra("traceparent", json::value(tp));
    s.add_lineage_extra("tenant", json::value("t"));
    CHECK(rath::session_traceparent(s) == std::optional<std::string>(tp));
    s.add_lineage_extra("traceparent", json::value("garbage"));
    CHECK_FALSE(rath::session_traceparent(s));
}

}  // TEST_SUITE
