#pragma once
// Tiny helpers shared by the bench programs: wall/CPU clocks, peak RSS, and one JSON
// object per line on stdout.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace rath::bench {

inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// User + system CPU seconds of this process so far.
inline double cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// System (kernel) CPU seconds of this process so far.
inline double sys_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) / 1e6;
}

inline double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Current resident set size in KiB (from /proc/self/statm).
inline long rss_kb() {
    long pages_total = 0, pages_resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
        std::fclose(f);
    }
    return pages_resident * 4;
}

// A JSON line built from (key, already-encoded JSON value) pairs.
class Line {
public:
    explicit Line(const std::string& bench) { add_str("bench", bench); }
    Line& add_str(const std::string& k, const std::string& v) {
        fields_.emplace_back(k, "\"" + v + "\"");
        return *this;
    }
    Line& add(const std::string& k, double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6g", v);
        fields_.emplace_back(k, buf);
        return *this;
    }
    Line& add(const std::string& k, long long v) {
        fields_.emplace_back(k, std::to_string(v));
        return *this;
    }
    Line& add(const std::string& k, int v) { return add(k, static_cast<long long>(v)); }
    Line& add(const std::string& k, bool v) {
        fields_.emplace_back(k, v ? "true" : "false");
        return *this;
    }
    void print() const {
        std::string out = "{";
        for (std::size_t i = 0; i < fields_.size(); ++i) {
            if (i) out += ",";
            out += "\"" + fields_[i].first + "\":" + fields_[i].second;
        }
        out += "}\n";
        std::fputs(out.c_str(), stdout);
        std::fflush(stdout);
    }

private:
    std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace rath::bench
