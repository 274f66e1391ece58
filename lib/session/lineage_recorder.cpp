#include <rath/session/lineage_recorder.hpp>

#include "lib/session/session_state.hpp"

namespace rath::lineage {

namespace {
thread_local bool t_mode = true;
thread_local JournalPtr t_journal;
}  // namespace

bool graph_mode() noexcept { return t_mode; }

GraphModeOverride::GraphModeOverride(bool enabled) noexcept : previous_(t_mode) { t_mode = enabled; }
GraphModeOverride::~GraphModeOverride() { t_mode = previous_; }

void Journal::record(std::string id) {
    std::lock_guard lk(mu_);
    ids_.push_back(std::move(id));
}

void Journal::record(const Session& s) {
    std::lock_guard lk(mu_);
    ids_.push_back(s.id());
    sessions_.insert_or_assign(s.id(), s);
}

std::optional<Session> Journal::find(std::string_view id) const {
    std::lock_guard lk(mu_);
    auto it = sessions_.find(std::string(id));
    if (it == sessions_.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> Journal::visit_order() const {
    std::lock_guard lk(mu_);
    return ids_;
}

std::size_t Journal::size() const {
    std::lock_guard lk(mu_);
    return ids_.size();
}

JournalTracking::JournalTracking(JournalPtr journal)
    : journal_(journal ? std::move(journal) : std::make_shared<Journal>()), previous_(t_journal) {
    t_journal = journal_;
}
JournalTracking::~JournalTracking() { t_journal = std::move(previous_); }

JournalPtr current_journal() noexcept { return t_journal; }

LineageContext capture_lineage_context() { return {t_mode, t_journal}; }

LineageContextScope::LineageContextScope(LineageContext ctx) : previous_{t_mode, t_journal} {
    t_mode = ctx.graph_mode;
    t_journal = std::move(ctx.journal);
}
LineageContextScope::~LineageContextScope() {
    t_mode = previous_.graph_mode;
    t_journal = std::move(previous_.journal);
}

void stamp_new_session(const Session& s, std::vector<std::string> parents, std::string op, LineageKind kind,
                       LineageExtras extras) {
    if (!t_mode) return;
    s.set_lineage(Lineage{std::move(parents), std::move(op), kind, std::move(extras)});
    if (t_journal) t_journal->record(s);
}

void stamp_operator_output(const Session& out, const Session& user, const Session& agent, std::string op,
                           LineageKind kind, LineageExtras extras) {
    if (!t_mode) {
        detail::SessionAccess::set_legacy_lineage(out, SessionLineage{user.id(), agent.id(), std::move(op)});
        return;
    }
    // Not `{user.id(), agent.id()}`: an initializer list would copy each id twice.
    std::vector<std::string> parents;
    parents.reserve(2);
    parents.push_back(user.id());
    parents.push_back(agent.id());
    stamp_new_session(out, std::move(parents), std::move(op), kind, std::move(extras));
    detail::SessionAccess::keep_legacy_in_lineage(out);
}

}  // namespace rath::lineage
