#include <rath/memory/uri.hpp>

#include <doctest/doctest.h>

using namespace rath::memory;

TEST_CASE("memory_uri_prefix names the scheme, the legacy scheme or a root form") {
    CHECK(memory_uri_prefix("memory://user/a") == std::optional<std::string_view>("memory://"));
    CHECK(memory_uri_prefix("viking://user/a") == std::optional<std::string_view>("viking://"));
    CHECK(memory_uri_prefix("memory:") == std::optional<std::string_view>("memory:/"));
    CHECK(memory_uri_prefix("viking:///") == std::optional<std::string_view>("viking://"));
    CHECK(memory_uri_prefix("viking:") == std::optional<std::string_view>("memory:/"));
    CHECK_FALSE(memory_uri_prefix("http://user/a").has_value());
    CHECK_FALSE(is_memory_uri("memory:/user"));  // one slash and not a root form
}

TEST_CASE("valid_memory_uri requires a known scope as the first segment") {
    CHECK(valid_memory_uri("memory://user/prefs"));
    CHECK(valid_memory_uri("memory://resources"));
    CHECK(valid_memory_uri("memory://"));
    CHECK(valid_memory_uri("viking://agent/x"));
    CHECK_FALSE(valid_memory_uri("memory://bogus/x"));
    CHECK_FALSE(valid_memory_uri("memory://User/x"));
    CHECK_FALSE(valid_memory_uri("file:///etc"));
}

TEST_CASE("public and wire forms swap the scheme and the root") {
    CHECK(to_public_uri("viking://user/a") == "memory://user/a");
    CHECK(to_public_uri("viking://") == "memory:/");
    CHECK(to_public_uri("memory://user/a") == "memory://user/a");
    CHECK(to_wire_uri("memory://user/a") == "viking://user/a");
    CHECK(to_wire_uri("memory:") == "viking:/");
    CHECK(to_wire_uri("other") == "other");
}
