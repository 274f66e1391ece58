#pragma once
// One sandbox's control groups: cpu quota, memory limit, pids.max and the freezer, on
// cgroup v1 (one directory per controller hierarchy) or v2 (one directory with the
// controllers enabled), created under the server's own cgroup. Every member does
// file I/O: call from the blocking pool. Not thread safe; the owner serialises.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rath::sandbox_server {

struct CgroupLimits {
    std::optional<double> cpu;            // cores
    std::optional<std::uint64_t> memory;  // bytes
    std::optional<std::uint64_t> pids;
};

class Cgroup {
public:
    // Where cgroups can be made here: v1 controller directories or the v2 one (looked up
    // once per process). Empty members mean that controller is unavailable.
    struct Roots {
        bool v2 = false;
        std::string cpu, memory, pids, freezer;  // v1: per controller; v2: all the same directory
    };
    static const Roots& roots();

    Cgroup() = default;
    // Makes (or adopts, after a restart) the cgroups named `name` and applies `limits`.
    // A controller that is missing or refuses the limit is skipped and listed in
    // `skipped()`; never throws for that.
    Cgroup(std::string name, const CgroupLimits& limits);

    // cgroup.procs files a process must write its pid to (one per hierarchy on v1).
    [[nodiscard]] std::vector<std::string> procs_files() const;
    [[nodiscard]] const std::vector<std::string>& skipped() const noexcept { return skipped_; }
    [[nodiscard]] bool can_freeze() const noexcept { return !freezer_.empty(); }

    // Freezes / thaws every process in the group; returns false when the freezer is
    // missing or did not settle within ~2 s.
    bool freeze();
    bool thaw();
    // SIGKILLs every process in the group (thawing first, since frozen tasks do not
    // die), then removes the directories. Bounded: about 2 s.
    void destroy();
    // Pids currently in the group (from the first hierarchy).
    [[nodiscard]] std::vector<int> pids() const;
    // memory.usage_in_bytes / memory.current, or nullopt.
    [[nodiscard]] std::optional<std::uint64_t> memory_usage() const;
    // Total CPU time used by the group in nanoseconds, or nullopt.
    [[nodiscard]] std::optional<std::uint64_t> cpu_usage_ns() const;

    // Names of leftover cgroups with this prefix (for reaping after a restart).
    [[nodiscard]] static std::vector<std::string> list(const std::string& prefix);

private:
    std::vector<std::string> dirs_;  // distinct directories
    std::string cpu_, memory_, pids_, freezer_;
    std::vector<std::string> skipped_;
    bool v2_ = false;
};

}  // namespace rath::sandbox_server
