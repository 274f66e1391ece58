#pragma once
// Environment variables for one test: set or unset for a scope and restored after, a
// private OPENRATH_HOME, and a clean provider environment so that no developer key,
// proxy or config reaches a test.
#include "support/temp_dir.hpp"

#include <rath/config/env.hpp>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::test {

// Sets (value) or unsets (nullptr) variables for a scope; the destructor restores what
// was there before, in reverse order.
class EnvGuard {
public:
    EnvGuard() = default;
    EnvGuard(std::initializer_list<std::pair<const char*, const char*>> vars) {
        for (const auto& [name, value] : vars) set(name, value);
    }
    ~EnvGuard() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second)
                ::setenv(it->first.c_str(), it->second->c_str(), 1);
            else
                ::unsetenv(it->first.c_str());
        }
    }
    EnvGuard(const EnvGuard&) = delete;
    EnvGuard& operator=(const EnvGuard&) = delete;

    void set(const char* name, const char* value) {
        const char* old = std::getenv(name);
        saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// OPENRATH_HOME = a fresh temp dir for the test's lifetime.
class TempHome {
public:
    TempHome() { env_.set("OPENRATH_HOME", dir_.path().c_str()); }
    const std::filesystem::path& path() const { return dir_.path(); }
    std::filesystem::path sessions() const { return dir_.path() / "sessions"; }

private:
    TempDir dir_;   // declared first: removed after the variable is restored
    EnvGuard env_;
};

// The variables a provider, the config store or the HTTP client read.
// Proxies reach every HTTP client; a developer's would send loopback tests elsewhere.
inline constexpr const char* proxy_env_names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                                  "https_proxy", "ALL_PROXY", "all_proxy"};

// Every variable rath reads (rath/config/env.hpp) unset, but for the ones that only
// tune the process (threads, colours, the examples' offline switch); proxies unset;
// OPENRATH_HOME at an empty temp dir.
class CleanEnv {
public:
    CleanEnv() {
        for (const auto& v : rath::config::declared_env()) {
            const std::string name(v.name);
            if (name == "OPENRATH_HOME" || name == "RATH_THREADS" || name == "NO_COLOR" || name == "RATH_EXAMPLES_OFFLINE")
                continue;
            env_.set(name.c_str(), nullptr);
        }
        for (const char* name : proxy_env_names) env_.set(name, nullptr);
    }
    const std::filesystem::path& path() const { return home_.path(); }

private:
    TempHome home_;
    EnvGuard env_;
};

}  // namespace rath::test
