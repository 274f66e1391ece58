#pragma once
// The process-wide session registry (session.md §1.10): every session the loop
// produced or consumed, by id, plus the active one. Entries are strong references and
// live for the process (clear() exists for tests).
#include <rath/session.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace rath {

class SessionRegistry {
public:
    void register_session(const Session& s);
    std::optional<Session> get(std::string_view id) const;
    void set_active(const std::optional<Session>& s);
    std::optional<std::string> active_id() const;
    // Registered sessions in registration order (a lineage graph).
    std::vector<Session> sessions() const;
    std::size_t size() const;
    void clear();

private:
    mutable std::mutex mu_;
    std::vector<Session> order_;
    std::unordered_map<std::string, std::size_t> index_;
    std::optional<std::string> active_;
};

SessionRegistry& session_registry();

}  // namespace rath
