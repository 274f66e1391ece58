#pragma once
// Network namespaces for tests whose child processes must reach the test's servers over
// a real interface rather than loopback: a bridge in the test's namespace with a host
// address, and per namespace a veth pair (one end on the bridge, the other inside with
// its own address). Addresses are from 198.18.0.0/24 (RFC 2544, reserved for network
// benchmark tests): they exist only on these interfaces, inside this machine.
//
// Needs root and iproute2's `ip` (scripts/install-deps.sh --test). When either is
// missing, or the kernel refuses (a sandbox without CAP_NET_ADMIN), try_create()
// returns nullptr with the reason, and the test runs its children on loopback instead.
// Everything made is deleted by the destructor; names carry the test's pid, so a test
// that crashed leaves only namespaces nobody else uses.
#include "support/child_process.hpp"

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace rath::test {

class NetNamespaces {
public:
    static constexpr const char* host_address = "198.18.0.1";

    // `count` namespaces, or nullptr with `why` set.
    static std::unique_ptr<NetNamespaces> try_create(int count, std::string& why) {
        if (::geteuid() != 0) {
            why = "not root: network namespaces need CAP_NET_ADMIN";
            return nullptr;
        }
        const std::string ip = ip_path();
        if (ip.empty()) {
            why = "iproute2's ip is missing (scripts/install-deps.sh --test installs it)";
            return nullptr;
        }
        std::unique_ptr<NetNamespaces> n(new NetNamespaces(ip));
        const std::string tag = std::to_string(::getpid());
        n->bridge_ = "rbr" + tag;
        if (!n->ip({"link", "add", n->bridge_, "type", "bridge"}, why)) return nullptr;
        n->made_bridge_ = true;
        if (!n->ip({"addr", "add", std::string(host_address) + "/24", "dev", n->bridge_}, why) ||
            !n->ip({"link", "set", n->bridge_, "up"}, why))
            return nullptr;
        for (int i = 0; i < count; ++i) {
            const std::string ns = "rath-" + tag + "-" + std::to_string(i);
            const std::string host_end = "rv" + tag + "h" + std::to_string(i);
            const std::string inner_end = "rv" + tag + "n" + std::to_string(i);
            const std::string address = "198.18.0." + std::to_string(10 + i);
            if (!n->ip({"netns", "add", ns}, why)) return nullptr;
            n->namespaces_.push_back(ns);
            n->addresses_.push_back(address);
            if (!n->ip({"link", "add", host_end, "type", "veth", "peer", "name", inner_end}, why) ||
                !n->ip({"link", "set", inner_end, "netns", ns}, why) ||
                !n->ip({"link", "set", host_end, "master", n->bridge_}, why) ||
                !n->ip({"link", "set", host_end, "up"}, why) ||
                !n->ip({"-n", ns, "addr", "add", address + "/24", "dev", inner_end}, why) ||
                !n->ip({"-n", ns, "link", "set", inner_end, "up"}, why) ||
                !n->ip({"-n", ns, "link", "set", "lo", "up"}, why))
                return nullptr;
        }
        return n;
    }

    ~NetNamespaces() {
        std::string ignored;
        // Deleting a namespace deletes its veth end, and with it the peer on the bridge.
        for (const auto& ns : namespaces_) (void)ip({"netns", "del", ns}, ignored);
        if (made_bridge_) (void)ip({"link", "del", bridge_}, ignored);
    }
    NetNamespaces(const NetNamespaces&) = delete;
    NetNamespaces& operator=(const NetNamespaces&) = delete;

    // For SpawnOptions::netns.
    std::string path(int i) const { return "/var/run/netns/" + namespaces_.at(static_cast<std::size_t>(i)); }
    const std::string& address(int i) const { return addresses_.at(static_cast<std::size_t>(i)); }

private:
    explicit NetNamespaces(std::string ip) : ip_(std::move(ip)) {}

    static std::string ip_path() {
        for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
            if (::access(p, X_OK) == 0) return p;
        return {};
    }

    bool ip(std::vector<std::string> args, std::string& why) const {
        std::string line = "ip";
        for (const auto& a : args) line += " " + a;
        const ChildResult r = run_child(ip_, std::move(args), std::chrono::seconds(20));
        if (r.exit_code == 0) return true;
        why = line + " failed (" + std::to_string(r.exit_code) + "): " + r.err;
        return false;
    }

    std::string ip_;
    std::string bridge_;
    bool made_bridge_ = false;
    std::vector<std::string> namespaces_, addresses_;
};

}  // namespace rath::test
