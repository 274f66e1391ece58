#pragma once
// Wire models of the OpenSandbox lifecycle API (alibaba/OpenSandbox specs/sandbox-lifecycle.yml):
// the validated CreateSandboxRequest, resource quantities, volumes, the metadata list
// filter, pagination, and the typed error every handler throws (ErrorResponse{code,message}).
// Pure: no file system access (host-path allow-listing happens in the manager).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::sandbox_server {

// An error reply: HTTP status plus ErrorResponse{code, message}.
struct ApiError : std::runtime_error {
    int status;
    std::string code;
    ApiError(int status, std::string code, const std::string& message)
        : std::runtime_error(message), status(status), code(std::move(code)) {}
};

// Error codes (the spellings of the OpenSandbox server where it has one; the container
// runtime's own codes carry the BWRAP:: prefix where the Docker runtime has DOCKER::).
namespace codes {
inline constexpr const char* invalid_parameter = "SANDBOX::INVALID_PARAMETER";
inline constexpr const char* invalid_metadata_label = "SANDBOX::INVALID_METADATA_LABEL";
inline constexpr const char* api_not_supported = "SANDBOX::API_NOT_SUPPORTED";
inline constexpr const char* unknown_error = "SANDBOX::UNKNOWN_ERROR";
inline constexpr const char* missing_api_key = "MISSING_API_KEY";
inline constexpr const char* invalid_api_key = "INVALID_API_KEY";
inline constexpr const char* not_found = "BWRAP::SANDBOX_NOT_FOUND";
inline constexpr const char* not_running = "BWRAP::SANDBOX_NOT_RUNNING";
inline constexpr const char* not_paused = "BWRAP::SANDBOX_NOT_PAUSED";
inline constexpr const char* image_not_found = "BWRAP::SANDBOX_IMAGE_NOT_FOUND";
inline constexpr const char* start_failed = "BWRAP::SANDBOX_START_FAILED";
inline constexpr const char* invalid_expiration = "BWRAP::INVALID_EXPIRATION";
inline constexpr const char* expiration_not_extended = "BWRAP::EXPIRATION_NOT_EXTENDED";
inline constexpr const char* invalid_port = "BWRAP::INVALID_PORT";
inline constexpr const char* capacity = "BWRAP::SANDBOX_LIMIT_REACHED";
inline constexpr const char* invalid_volume_name = "VOLUME::INVALID_NAME";
inline constexpr const char* duplicate_volume_name = "VOLUME::DUPLICATE_NAME";
inline constexpr const char* invalid_volume_backend = "VOLUME::INVALID_BACKEND";
inline constexpr const char* unsupported_volume_backend = "VOLUME::UNSUPPORTED_BACKEND";
inline constexpr const char* invalid_mount_path = "VOLUME::INVALID_MOUNT_PATH";
inline constexpr const char* invalid_sub_path = "VOLUME::INVALID_SUB_PATH";
inline constexpr const char* invalid_host_path = "VOLUME::INVALID_HOST_PATH";
inline constexpr const char* host_path_not_allowed = "VOLUME::HOST_PATH_NOT_ALLOWED";
}  // namespace codes

// resourceLimits, parsed. Unknown keys are kept out (and listed in `ignored`).
struct Limits {
    std::optional<double> cpu;                 // cores ("500m" = 0.5)
    std::optional<std::uint64_t> memory;       // bytes
    std::optional<std::uint64_t> pids;         // process count
    std::optional<std::uint64_t> disk;         // bytes of the workspace ("ephemeral-storage" or "disk")
    std::vector<std::string> ignored;          // e.g. "gpu"
};

struct Volume {
    std::string name;
    std::string host_path;   // absolute host path (backend `host`)
    std::string mount_path;  // absolute path inside the sandbox
    bool read_only = false;
    std::string sub_path;    // relative, no ".."; "" = none
};

struct CreateRequest {
    std::string image_uri;
    std::vector<std::string> entrypoint;
    std::vector<std::pair<std::string, std::string>> env;
    std::map<std::string, std::string> metadata;
    std::optional<std::int64_t> timeout_s;  // nullopt: no expiry (manual cleanup)
    Limits limits;
    std::map<std::string, std::string> raw_limits;  // echoed back as given
    bool network = false;                     // share the host network
    std::vector<Volume> volumes;
    std::map<std::string, std::string> extensions;
};

struct CreateLimits {
    std::int64_t min_timeout_s = 60;
    std::int64_t max_timeout_s = 86400;
};

// Parses and validates a CreateSandboxRequest body; throws ApiError (400) naming the
// offending field.
[[nodiscard]] CreateRequest parse_create_request(std::string_view body, const CreateLimits& limits = {});

// "500m" -> 0.5, "2" -> 2, "1.5" -> 1.5; nullopt when malformed or not positive.
[[nodiscard]] std::optional<double> parse_cpu(std::string_view s);
// "512Mi", "2Gi", "1G", "100M", "1024", "1e3": bytes (Kubernetes quantity suffixes);
// nullopt when malformed.
[[nodiscard]] std::optional<std::uint64_t> parse_bytes(std::string_view s);

// ?metadata=k%3Dv%26k2%3Dv2 after query decoding ("k=v&k2=v2", each part decoded once more).
[[nodiscard]] std::map<std::string, std::string> parse_metadata_filter(std::string_view s);
// Percent-decoding ('+' stays '+'); malformed escapes are kept as they are.
[[nodiscard]] std::string percent_decode(std::string_view s);

// RenewSandboxExpirationRequest.expiresAt; throws ApiError 400 when missing or not a date.
[[nodiscard]] std::chrono::system_clock::time_point parse_renew_request(std::string_view body);

// RFC 3339 UTC with milliseconds and "Z", what the SDKs' Date parsers take.
[[nodiscard]] std::string rfc3339(std::chrono::system_clock::time_point t);
// RFC 3339 / ISO 8601 ("Z" or an offset, optional fraction); nullopt when malformed.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s);

// {"code": ..., "message": ...}
[[nodiscard]] std::string error_body(std::string_view code, std::string_view message);

struct Page {
    std::size_t page = 1, page_size = 20;
};
// ?page= and ?pageSize= (both >= 1; pageSize capped at 1000); throws ApiError 400.
[[nodiscard]] Page parse_page(std::optional<std::string_view> page, std::optional<std::string_view> page_size);

}  // namespace rath::sandbox_server
