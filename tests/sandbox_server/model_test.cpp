#include "model.hpp"

#include <doctest/doctest.h>

using namespace rath::sandbox_server;

namespace {
ApiError create_error(std::string_view body) {
    try {
        (void)parse_create_request(body);
    } catch (const ApiError& e) {
        return e;
    }
    FAIL("expected an ApiError for " << body);
    return ApiError(0, "", "");
}
constexpr const char* minimal = R"({"image":{"uri":"host"},"entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"500m","memory":"512Mi"},"timeout":600})";
}  // namespace

TEST_CASE("a minimal CreateSandboxRequest parses with its limits, timeout and no network") {
    auto r = parse_create_request(minimal);
    CHECK(r.image_uri == "host");
    CHECK(r.entrypoint == std::vector<std::string>{"tail", "-f", "/dev/null"});
    CHECK(r.timeout_s == 600);
    REQUIRE(r.limits.cpu.has_value());
    CHECK(*r.limits.cpu == doctest::Approx(0.5));
    CHECK(r.limits.memory == 512ull << 20);
    CHECK_FALSE(r.network);
    CHECK(r.raw_limits.at("memory") == "512Mi");
}

TEST_CASE("a missing image, entrypoint or resourceLimits, or a timeout out of range, is a 400 naming the field") {
    auto e = create_error(R"({"entrypoint":["x"],"resourceLimits":{}})");
    CHECK(e.status == 400);
    CHECK(std::string(e.what()).find("image") != std::string::npos);
    CHECK(std::string(create_error(R"({"image":{"uri":"host"},"entrypoint":[],"resourceLimits":{}})").what()).find("entrypoint") != std::string::npos);
    CHECK(std::string(create_error(R"({"image":{"uri":"host"},"entrypoint":["x"]})").what()).find("resourceLimits") != std::string::npos);
    auto t = create_error(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{},"timeout":59})");
    CHECK(t.code == codes::invalid_parameter);
    CHECK(std::string(t.what()).find("between 60 and 86400") != std::string::npos);
    CHECK(create_error(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{},"timeout":"60"})").status == 400);
    CHECK(create_error("not json").status == 400);
}

TEST_CASE("a null timeout means no expiry") {
    auto r = parse_create_request(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{},"timeout":null})");
    CHECK_FALSE(r.timeout_s.has_value());
}

TEST_CASE("resource quantities follow the Kubernetes suffixes") {
    CHECK(*parse_cpu("250m") == doctest::Approx(0.25));
    CHECK(*parse_cpu("2") == doctest::Approx(2.0));
    CHECK_FALSE(parse_cpu("0").has_value());
    CHECK_FALSE(parse_cpu("-1").has_value());
    CHECK_FALSE(parse_cpu("lots").has_value());
    CHECK(parse_bytes("2Gi") == 2ull << 30);
    CHECK(parse_bytes("1G") == 1000000000ull);
    CHECK(parse_bytes("100M") == 100000000ull);
    CHECK(parse_bytes("1024") == 1024ull);
    CHECK(parse_bytes("1.5Ki") == 1536ull);
    CHECK_FALSE(parse_bytes("12Q").has_value());
    CHECK_FALSE(parse_bytes("").has_value());
    auto e = create_error(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{"memory":"1Ki"}})");
    CHECK(std::string(e.what()).find("memory") != std::string::npos);
    auto r = parse_create_request(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{"gpu":"1","ephemeral-storage":"64Mi","pids":"32"}})");
    CHECK(r.limits.ignored == std::vector<std::string>{"gpu"});
    CHECK(r.limits.disk == 64ull << 20);
    CHECK(r.limits.pids == 32u);
}

TEST_CASE("network: no policy and deny mean no network, allow or an empty policy mean the host network, rules are refused") {
    std::string base = R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{})";
    CHECK_FALSE(parse_create_request(base + "}").network);
    CHECK_FALSE(parse_create_request(base + R"(,"networkPolicy":{"defaultAction":"deny"}})").network);
    CHECK(parse_create_request(base + R"(,"networkPolicy":{"defaultAction":"allow"}})").network);
    CHECK(parse_create_request(base + R"(,"networkPolicy":{}})").network);
    auto e = create_error(base + R"(,"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}})");
    CHECK(e.code == codes::api_not_supported);
}

TEST_CASE("volumes: DNS-label names, absolute mount paths, one backend, only host, no '..' in subPath") {
    std::string base = R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{},"volumes":[)";
    auto ok = parse_create_request(base + R"({"name":"data","host":{"path":"/srv/x"},"mountPath":"/data","readOnly":true,"subPath":"a/b"}]})");
    REQUIRE(ok.volumes.size() == 1);
    CHECK(ok.volumes[0].host_path == "/srv/x");
    CHECK(ok.volumes[0].sub_path == "a/b");
    CHECK(ok.volumes[0].read_only);
    CHECK(create_error(base + R"({"name":"Data","host":{"path":"/x"},"mountPath":"/d"}]})").code == codes::invalid_volume_name);
    CHECK(create_error(base + R"({"name":"d","host":{"path":"/x"},"mountPath":"d"}]})").code == codes::invalid_mount_path);
    CHECK(create_error(base + R"({"name":"d","host":{"path":"x"},"mountPath":"/d"}]})").code == codes::invalid_host_path);
    CHECK(create_error(base + R"({"name":"d","pvc":{"claimName":"c"},"mountPath":"/d"}]})").code == codes::unsupported_volume_backend);
    CHECK(create_error(base + R"({"name":"d","host":{"path":"/x"},"pvc":{"claimName":"c"},"mountPath":"/d"}]})").code == codes::invalid_volume_backend);
    CHECK(create_error(base + R"({"name":"d","host":{"path":"/x"},"mountPath":"/d","subPath":"../etc"}]})").code == codes::invalid_sub_path);
    CHECK(create_error(base + R"({"name":"d","host":{"path":"/x"},"mountPath":"/d"},{"name":"d","host":{"path":"/y"},"mountPath":"/e"}]})").code == codes::duplicate_volume_name);
}

TEST_CASE("snapshots, pools and reserved metadata keys are refused") {
    CHECK(create_error(R"({"snapshotId":"s","resourceLimits":{}})").code == codes::api_not_supported);
    CHECK(create_error(R"({"image":{"uri":"host"},"entrypoint":["x"],"resourceLimits":{},"metadata":{"opensandbox.io/x":"1"}})").code ==
          codes::invalid_metadata_label);
}

TEST_CASE("the list's metadata filter is k=v pairs joined by '&', each part decoded") {
    auto m = parse_metadata_filter("project=Apollo&note=Demo%20Test");
    CHECK(m.size() == 2);
    CHECK(m["project"] == "Apollo");
    CHECK(m["note"] == "Demo Test");
    CHECK(percent_decode("a%2Fb%zz%4") == "a/b%zz%4");
}

TEST_CASE("RFC 3339 times round-trip to the millisecond and accept offsets") {
    auto t = parse_rfc3339("2025-11-16T14:30:45.123Z");
    REQUIRE(t.has_value());
    CHECK(rfc3339(*t) == "2025-11-16T14:30:45.123Z");
    CHECK(rfc3339(*parse_rfc3339("2025-11-16T16:30:45+02:00")) == "2025-11-16T14:30:45.000Z");
    CHECK_FALSE(parse_rfc3339("2025-11-16").has_value());
    CHECK_FALSE(parse_rfc3339("2025-13-16T00:00:00Z").has_value());
    CHECK_THROWS_AS((void)parse_renew_request(R"({"expiresAt":"tomorrow"})"), ApiError);
    CHECK(rfc3339(parse_renew_request(R"({"expiresAt":"2030-01-02T03:04:05Z"})")) == "2030-01-02T03:04:05.000Z");
}

TEST_CASE("pages start at 1, pageSize is capped and junk is a 400") {
    auto p = parse_page(std::nullopt, std::nullopt);
    CHECK(p.page == 1);
    CHECK(p.page_size == 20);
    CHECK(parse_page("3", "100000").page_size == 1000);
    CHECK_THROWS_AS((void)parse_page("0", std::nullopt), ApiError);
    CHECK_THROWS_AS((void)parse_page("x", std::nullopt), ApiError);
}

TEST_CASE("an error body is {code, message}") {
    CHECK(error_body("X::Y", "it \"broke\"") == R"({"code":"X::Y","message":"it \"broke\""})");
}
