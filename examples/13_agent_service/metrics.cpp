#include "metrics.hpp"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>

namespace service {

namespace {

// Label values escaped as the text format requires: backslash, double quote, newline.
void append_escaped(std::string& out, const std::string& v) {
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

void append_labels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                   const char* extra_name = nullptr, const std::string& extra_value = {}) {
    if (names.empty() && !extra_name) return;
    out += '{';
    bool first = true;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!first) out += ',';
        first = false;
        out += names[i];
        out += "=\"";
        append_escaped(out, i < values.size() ? values[i] : std::string());
        out += '"';
    }
    if (extra_name) {
        if (!first) out += ',';
        out += extra_name;
        out += "=\"";
        out += extra_value;
        out += '"';
    }
    out += '}';
}

// The shortest text that reads back as `v` ("0.005", not "0.0050000000000000001").
void append_number(std::string& out, double v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, ec == std::errc() ? end : buf);
}

void add_to(std::atomic<double>& a, double v) {
    double cur = a.load(std::memory_order_relaxed);
    while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
}

}  // namespace

std::atomic<double>& Family::at(const std::vector<std::string>& values) {
    std::lock_guard lk(mu_);
    auto& cell = cells_[values];
    if (!cell) cell = std::make_unique<std::atomic<double>>(0);
    return *cell;
}

void Family::add(const std::vector<std::string>& values, double v) { add_to(at(values), v); }

void Family::render(std::string& out) const {
    out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " " + type_ + "\n";
    std::lock_guard lk(mu_);
    if (cells_.empty() && label_names_.empty()) {
        out += name_ + " 0\n";
        return;
    }
    for (const auto& [values, cell] : cells_) {
        out += name_;
        append_labels(out, label_names_, values);
        out += ' ';
        append_number(out, cell->load(std::memory_order_relaxed));
        out += '\n';
    }
}

bool Family::empty() const {
    std::lock_guard lk(mu_);
    return cells_.empty();
}

Histogram::Cells& Histogram::at(const std::vector<std::string>& values) {
    std::lock_guard lk(mu_);
    auto& cell = cells_[values];
    if (!cell) cell = std::make_unique<Cells>();
    return *cell;
}

void Histogram::observe(const std::vector<std::string>& values, double seconds) {
    Cells& c = at(values);
    for (std::size_t i = 0; i < bounds.size(); ++i)
        if (seconds <= bounds[i]) c.buckets[i].fetch_add(1, std::memory_order_relaxed);
    c.count.fetch_add(1, std::memory_order_relaxed);
    add_to(c.sum, seconds);
}

void Histogram::render(std::string& out) const {
    out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " histogram\n";
    std::lock_guard lk(mu_);
    for (const auto& [values, c] : cells_) {
        for (std::size_t i = 0; i < bounds.size(); ++i) {
            std::string le;
            append_number(le, bounds[i]);
            out += name_ + "_bucket";
            append_labels(out, label_names_, values, "le", le);
            out += ' ' + std::to_string(c->buckets[i].load(std::memory_order_relaxed)) + '\n';
        }
        const auto count = c->count.load(std::memory_order_relaxed);
        out += name_ + "_bucket";
        append_labels(out, label_names_, values, "le", "+Inf");
        out += ' ' + std::to_string(count) + '\n';
        out += name_ + "_sum";
        append_labels(out, label_names_, values);
        out += ' ';
        append_number(out, c->sum.load(std::memory_order_relaxed));
        out += '\n' + name_ + "_count";
        append_labels(out, label_names_, values);
        out += ' ' + std::to_string(count) + '\n';
    }
}

std::string Metrics::render() const {
    std::string out;
    out.reserve(8192);
    for (const Family* f : {&runs_in_flight, &runs_queued, &runs_finished, &runs_rejected})
        f->render(out);
    llm_latency.render(out);
    for (const Family* f : {&llm_tokens, &tool_calls, &http_pool_connections, &http_pool_requests,
                            &server_connections, &sandboxes,
                            &registry_size, &rss, &fds})
        f->render(out);
    for (const Family* f : {&mcp_calls, &mcp_call_seconds, &memory_ops, &memory_op_seconds})
        if (!f->empty()) f->render(out);
    return out;
}

double resident_bytes() {
    std::ifstream in("/proc/self/statm");
    long pages_total = 0, pages_resident = 0;
    in >> pages_total >> pages_resident;
    return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

double open_fds() {
    double n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
        --n;  // the descriptor opendir itself holds
    }
    return n;
}

}  // namespace service
