#pragma once
// The agent service (examples/13_agent_service, next to this binary) as a child
// process with a generated config, and what the service benches read from it: its
// resident memory and descriptors from /proc, and a gauge from its /metrics page.
#include "bench/common/server_process.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace rath::bench {

// The service's own defaults (examples/13_agent_service/service.hpp).
struct ServiceLimits {
    long max_concurrent_runs = 512;
    long max_queued_runs = 512;
};

class ServiceProcess {
public:
    ServiceProcess(const std::string& llm_url, ServiceLimits limits)
        : config_(write_config(limits)),
          proc_({self_dir() + "/13_agent_service", config_, "--port", "0", "--llm-url", llm_url, "--quiet"}) {
        std::string line = proc_.read_line();
        const std::string prefix = "listening on ";
        if (line.rfind(prefix, 0) != 0) throw std::runtime_error("13_agent_service did not start: '" + line + "'");
        url_ = line.substr(prefix.size());
    }
    ~ServiceProcess() { std::remove(config_.c_str()); }
    const std::string& url() const { return url_; }
    pid_t pid() const { return proc_.pid(); }

private:
    static std::string write_config(const ServiceLimits& l) {
        std::string path = "/tmp/rath-service-bench-" + std::to_string(::getpid()) + ".json";
        std::ofstream(path) << "{\"provider\": {\"kind\": \"openai\", \"api_key\": \"sk-fake-local\", \"model\": \"fake-model\","
                               " \"max_connections\": 4096},"
                               " \"limits\": {\"max_concurrent_runs\": " << l.max_concurrent_runs
                            << ", \"max_queued_runs\": " << l.max_queued_runs
                            << ", \"recent_runs\": 10000},"
                               " \"tenants\": {\"default\": {\"max_concurrent_runs\": 1000000}}}";
        return path;
    }
    std::string config_;
    ChildProcess proc_;
    std::string url_;
};

// VmRSS of a process in MiB (-1 when it is gone).
inline double process_rss_mb(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    while (in >> key) {
        if (key == "VmRSS:") {
            double kb = 0;
            in >> kb;
            return kb / 1024.0;
        }
        std::string rest;
        std::getline(in, rest);
    }
    return -1;
}

inline long process_fds(pid_t pid) {
    long n = 0;
    if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
    }
    return n;
}

// The value of an unlabelled gauge on a Prometheus text page (-1 when absent).
inline double prometheus_value(const std::string& page, const std::string& name) {
    auto pos = page.find("\n" + name + " ");
    if (pos == std::string::npos) return -1;
    return std::strtod(page.c_str() + pos + name.size() + 2, nullptr);
}

}  // namespace rath::bench
