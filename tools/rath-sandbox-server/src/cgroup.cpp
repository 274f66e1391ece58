#include "cgroup.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace rath::sandbox_server {

namespace fs = std::filesystem;

namespace {

std::string read_small(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool write_file(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

bool writable_dir(const std::string& dir) {
    const std::string probe = dir + "/rath-sbx-probe-" + std::to_string(::getpid());
    if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) return false;
    ::rmdir(probe.c_str());
    return true;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

const Cgroup::Roots& Cgroup::roots() {
    static const Roots r = [] {
        Roots out;
        std::istringstream lines(read_small("/proc/self/cgroup"));
        std::string v2_path;
        bool have_v2 = false;
        for (std::string line; std::getline(lines, line);) {
            auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
            if (c1 == std::string::npos || c2 == std::string::npos) continue;
            std::string ctrls = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
            std::string path = line.substr(c2 + 1);
            if (path == "/") path.clear();
            auto v1 = [&](const char* name, std::string& slot) {
                if (ctrls.find(std::string(",") + name + ",") == std::string::npos) return;
                // A comounted hierarchy is named by its controllers joined with ','.
                std::string mount = "/sys/fs/cgroup/" + line.substr(c1 + 1, c2 - c1 - 1);
                if (!fs::is_directory(mount)) mount = std::string("/sys/fs/cgroup/") + name;
                if (writable_dir(mount + path)) slot = mount + path;
            };
            v1("cpu", out.cpu);
            v1("memory", out.memory);
            v1("pids", out.pids);
            v1("freezer", out.freezer);
            if (ctrls == ",,") {
                have_v2 = true;
                v2_path = path;
            }
        }
        const bool any_v1 = !out.cpu.empty() || !out.memory.empty() || !out.pids.empty() || !out.freezer.empty();
        if (!any_v1 && have_v2 && fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
            std::string dir = "/sys/fs/cgroup" + v2_path;
            if (writable_dir(dir)) {
                out.v2 = true;
                const std::string avail = read_small(dir + "/cgroup.controllers");
                // Best effort: a cgroup with processes of its own cannot enable controllers
                // for children (no internal processes rule); then only freezing works.
                write_file(dir + "/cgroup.subtree_control", "+cpu +memory +pids");
                const std::string enabled = read_small(dir + "/cgroup.subtree_control");
                if (enabled.find("cpu") != std::string::npos) out.cpu = dir;
                if (enabled.find("memory") != std::string::npos) out.memory = dir;
                if (enabled.find("pids") != std::string::npos) out.pids = dir;
                out.freezer = dir;  // cgroup.freeze exists in every non-root v2 cgroup
                (void)avail;
            }
        }
        return out;
    }();
    return r;
}

Cgroup::Cgroup(std::string name, const CgroupLimits& limits) {
    const Roots& r = roots();
    v2_ = r.v2;
    auto make = [&](const std::string& root, std::string& slot, const char* ctrl) {
        if (root.empty()) {
            skipped_.push_back(ctrl);
            return;
        }
        std::string dir = root + "/" + name;
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
            skipped_.push_back(ctrl);
            return;
        }
        slot = dir;
        if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
    };
    make(r.pids, pids_, "pids");
    make(r.freezer, freezer_, "freezer");
    make(r.memory, memory_, "memory");
    make(r.cpu, cpu_, "cpu");
    if (limits.pids && !pids_.empty() && !write_file(pids_ + "/pids.max", std::to_string(*limits.pids)))
        skipped_.push_back("pids.max");
    if (limits.memory && !memory_.empty()) {
        const std::string bytes = std::to_string(*limits.memory);
        bool ok = v2_ ? write_file(memory_ + "/memory.max", bytes)
                      : write_file(memory_ + "/memory.limit_in_bytes", bytes);
        if (!v2_) write_file(memory_ + "/memory.memsw.limit_in_bytes", bytes);  // no swap escape where accounted
        if (!ok) skipped_.push_back("memory");
    }
    if (limits.cpu && !cpu_.empty()) {
        constexpr long period = 100000;
        const long quota = std::max<long>(1000, static_cast<long>(*limits.cpu * period));
        bool ok = v2_ ? write_file(cpu_ + "/cpu.max", std::to_string(quota) + " " + std::to_string(period))
                      : (write_file(cpu_ + "/cpu.cfs_period_us", std::to_string(period)) &&
                         write_file(cpu_ + "/cpu.cfs_quota_us", std::to_string(quota)));
        if (!ok) skipped_.push_back("cpu");
    }
}

std::vector<std::string> Cgroup::procs_files() const {
    std::vector<std::string> out;
    for (auto& d : dirs_) out.push_back(d + "/cgroup.procs");
    return out;
}

namespace {
bool wait_state(const std::string& file, const std::string& want) {
    for (int i = 0; i < 400; ++i) {
        if (trim(read_small(file)) == want) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}
}  // namespace

bool Cgroup::freeze() {
    if (freezer_.empty()) return false;
    if (v2_) {
        if (!write_file(freezer_ + "/cgroup.freeze", "1")) return false;
        // cgroup.events reports "frozen 1" once every task stopped.
        for (int i = 0; i < 400; ++i) {
            if (read_small(freezer_ + "/cgroup.events").find("frozen 1") != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return false;
    }
    if (!write_file(freezer_ + "/freezer.state", "FROZEN")) return false;
    return wait_state(freezer_ + "/freezer.state", "FROZEN");
}

bool Cgroup::thaw() {
    if (freezer_.empty()) return false;
    if (v2_) return write_file(freezer_ + "/cgroup.freeze", "0");
    if (!write_file(freezer_ + "/freezer.state", "THAWED")) return false;
    return wait_state(freezer_ + "/freezer.state", "THAWED");
}

std::vector<int> Cgroup::pids() const {
    std::vector<int> out;
    if (dirs_.empty()) return out;
    std::istringstream procs(read_small(dirs_.front() + "/cgroup.procs"));
    for (int pid; procs >> pid;) out.push_back(pid);
    return out;
}

void Cgroup::destroy() {
    if (!freezer_.empty()) thaw();
    for (int round = 0; round < 200; ++round) {
        bool all_gone = true;
        for (auto& d : dirs_) {
            if (::rmdir(d.c_str()) == 0 || errno == ENOENT) continue;
            all_gone = false;
            std::istringstream procs(read_small(d + "/cgroup.procs"));
            for (long pid; procs >> pid;)
                if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
        if (all_gone) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    dirs_.clear();
    cpu_.clear();
    memory_.clear();
    pids_.clear();
    freezer_.clear();
}

std::optional<std::uint64_t> Cgroup::memory_usage() const {
    if (memory_.empty()) return std::nullopt;
    std::string s = trim(read_small(memory_ + (v2_ ? "/memory.current" : "/memory.usage_in_bytes")));
    if (s.empty()) return std::nullopt;
    return std::stoull(s);
}

std::optional<std::uint64_t> Cgroup::cpu_usage_ns() const {
    if (v2_) {
        if (cpu_.empty()) return std::nullopt;
        std::istringstream st(read_small(cpu_ + "/cpu.stat"));
        for (std::string k; st >> k;) {
            std::uint64_t v = 0;
            st >> v;
            if (k == "usage_usec") return v * 1000;
        }
        return std::nullopt;
    }
    // cpuacct sits beside cpu on v1; its directory is found from the cpu root.
    std::string acct = cpu_;
    auto pos = acct.find("/sys/fs/cgroup/cpu/");
    if (pos == std::string::npos) return std::nullopt;
    acct.replace(pos, std::string("/sys/fs/cgroup/cpu/").size(), "/sys/fs/cgroup/cpuacct/");
    std::string s = trim(read_small(acct + "/cpuacct.usage"));
    if (s.empty()) return std::nullopt;
    return std::stoull(s);
}

std::vector<std::string> Cgroup::list(const std::string& prefix) {
    std::vector<std::string> out;
    const Roots& r = roots();
    for (const std::string* root : {&r.pids, &r.freezer, &r.memory, &r.cpu}) {
        if (root->empty()) continue;
        std::error_code ec;
        for (auto& e : fs::directory_iterator(*root, ec)) {
            std::string n = e.path().filename().string();
            if (n.starts_with(prefix) && e.is_directory() && std::find(out.begin(), out.end(), n) == out.end())
                out.push_back(n);
        }
    }
    return out;
}

}  // namespace rath::sandbox_server
