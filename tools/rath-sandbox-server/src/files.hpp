#pragma once
// execd's filesystem operations (specs/execd-api.yaml: /files/*, /directories*) on a
// sandbox's file system seen from the host: every path resolves beneath a root
// directory descriptor with openat2(RESOLVE_IN_ROOT), so absolute paths, "..", and
// symlinks stay inside the sandbox's root exactly as they would for a process in it.
// Relative paths are taken from /workspace (execd's working directory).
//
// All functions block (file I/O): call them on the blocking pool. Errors: ApiError
// (404 FILE_NOT_FOUND, 400 INVALID_REQUEST_BODY / MISSING_QUERY, 416, 500 RUNTIME_ERROR).
// Modes are written the execd way: the decimal digits of `mode` are the octal bits
// (755 means rwxr-xr-x).
#include "model.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::sandbox_server::files {

namespace codes {
inline constexpr const char* invalid_request = "INVALID_REQUEST_BODY";
inline constexpr const char* missing_query = "MISSING_QUERY";
inline constexpr const char* runtime_error = "RUNTIME_ERROR";
inline constexpr const char* invalid_file = "INVALID_FILE";
inline constexpr const char* invalid_file_content = "INVALID_FILE_CONTENT";
inline constexpr const char* invalid_file_metadata = "INVALID_FILE_METADATA";
inline constexpr const char* file_not_found = "FILE_NOT_FOUND";
inline constexpr const char* context_not_found = "CONTEXT_NOT_FOUND";
inline constexpr const char* not_supported = "NOT_SUPPORTED";
}  // namespace codes

// Who owns what the server creates in the sandbox (its unprivileged user).
struct Owner {
    unsigned uid = 0, gid = 0;
};

class Root {
public:
    // Opens `root_path` (e.g. /proc/<pid>/root); throws ApiError 500 when it cannot.
    Root(const std::string& root_path, Owner owner);
    ~Root();
    Root(const Root&) = delete;
    Root& operator=(const Root&) = delete;

    // "/workspace/a" for "a"; absolute paths unchanged; "" is refused (400).
    [[nodiscard]] static std::string absolute(std::string_view path);

    [[nodiscard]] boost::json::object info(const std::vector<std::string>& paths) const;
    [[nodiscard]] boost::json::array search(const std::string& path, const std::string& pattern) const;
    [[nodiscard]] boost::json::array list(const std::string& path, int depth) const;
    // Creates parents as needed and writes the whole file; mode in execd digits (0: 644).
    void write(const std::string& path, std::string_view bytes, int mode, const std::string& owner,
               const std::string& group) const;

    struct Download {
        int fd = -1;                 // owned by the caller (close it)
        std::uint64_t size = 0;      // of the file
        std::uint64_t offset = 0, length = 0;  // what to send
        bool partial = false;        // 206
        std::string name;            // for Content-Disposition
    };
    // `range` is the Range header; throws ApiError 416 (message "bytes */size") when
    // it cannot be satisfied.
    [[nodiscard]] Download open_download(const std::string& path, std::optional<std::string_view> range) const;

    void remove_files(const std::vector<std::string>& paths) const;
    void remove_dirs(const std::vector<std::string>& paths) const;
    void make_dirs(const std::string& path, int mode, const std::string& owner, const std::string& group) const;
    void chmod(const std::string& path, int mode, const std::string& owner, const std::string& group) const;
    void move(const std::string& src, const std::string& dest) const;
    // Replaces every occurrence; returns how many.
    std::size_t replace(const std::string& path, std::string_view from, std::string_view to) const;

    [[nodiscard]] int fd() const noexcept { return fd_; }

private:
    int open_at(const std::string& abs, int flags, unsigned mode = 0) const;  // -errno on failure
    int make_parents(const std::string& abs) const;                          // fd of the parent dir or -errno
    boost::json::object file_info(const std::string& abs, int fd) const;
    void own(int fd, const std::string& owner, const std::string& group) const;

    int fd_ = -1;
    Owner owner_;
};

// execd's mode digits -> permission bits (755 -> 0755); nullopt when a digit is 8 or 9.
[[nodiscard]] std::optional<unsigned> mode_from_digits(int digits);
// 0755 -> 755
[[nodiscard]] int mode_to_digits(unsigned bits);
// "bytes=a-b" | "bytes=a-" | "bytes=-n" (the first range of a list) against `size`:
// {offset, length}, or nullopt when unsatisfiable; throws ApiError 400 when malformed.
[[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_range(std::string_view header,
                                                                                 std::uint64_t size);

// One part of a multipart/form-data body.
struct Part {
    std::string name, filename, content_type;
    std::string_view data;  // into the body
};
// The boundary of a multipart Content-Type, or nullopt.
[[nodiscard]] std::optional<std::string> multipart_boundary(std::string_view content_type);
// Throws ApiError 400 INVALID_FILE when the body is not a well-formed multipart body.
[[nodiscard]] std::vector<Part> parse_multipart(std::string_view body, std::string_view boundary);

}  // namespace rath::sandbox_server::files
