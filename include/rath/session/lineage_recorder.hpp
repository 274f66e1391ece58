#pragma once
// Lineage recording (session.md §4.2): operators stamp the sessions they create
// through stamp_new_session(). Recording is on by default and can be switched off
// for a scope (GraphModeOverride); a Journal attached for a scope records the ids
// of stamped sessions in stamping order. Both settings are per thread: capture()
// them when handing work to another thread and reinstall them there
// (LineageContextScope), as the agent loop does at submit time.
#include <rath/session.hpp>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace rath::lineage {

// Current graph mode on this thread (default: on).
[[nodiscard]] bool graph_mode() noexcept;

// Scoped change of the graph mode, restored on destruction.
class GraphModeOverride {
public:
    explicit GraphModeOverride(bool enabled) noexcept;
    ~GraphModeOverride();
    GraphModeOverride(const GraphModeOverride&) = delete;
    GraphModeOverride& operator=(const GraphModeOverride&) = delete;

private:
    bool previous_;
};

// Ids of stamped sessions in stamping order. Thread-safe. A journal also keeps the
// sessions it recorded alive (the registry only holds weak references), so a graph
// recorded under JournalTracking can be exported after its handles are gone.
class Journal {
public:
    void record(std::string id);
    void record(const Session& s);
    [[nodiscard]] std::vector<std::string> visit_order() const;
    [[nodiscard]] std::size_t size() const;
    // A session recorded by this journal, by id.
    [[nodiscard]] std::optional<Session> find(std::string_view id) const;

private:
    mutable std::mutex mu_;
    std::vector<std::string> ids_;
    std::unordered_map<std::string, Session> sessions_;
};
using JournalPtr = std::shared_ptr<Journal>;

// Attaches `journal` (a fresh one when null) for the scope; an inner tracking
// shadows an outer one. The journal stays readable after the scope.
class JournalTracking {
public:
    explicit JournalTracking(JournalPtr journal = nullptr);
    ~JournalTracking();
    JournalTracking(const JournalTracking&) = delete;
    JournalTracking& operator=(const JournalTracking&) = delete;
    [[nodiscard]] const JournalPtr& journal() const noexcept { return journal_; }

private:
    JournalPtr journal_;
    JournalPtr previous_;
};

// The journal attached on this thread, or null.
[[nodiscard]] JournalPtr current_journal() noexcept;

// Graph mode and journal of a thread, to carry across threads.
struct LineageContext {
    bool graph_mode = true;
    JournalPtr journal{};
};
[[nodiscard]] LineageContext capture_lineage_context();

class LineageContextScope {
public:
    explicit LineageContextScope(LineageContext ctx);
    ~LineageContextScope();
    LineageContextScope(const LineageContextScope&) = delete;
    LineageContextScope& operator=(const LineageContextScope&) = delete;

private:
    LineageContext previous_;
};

// With graph mode on: overwrites the four lineage fields of `s` and records its id in
// the attached journal. With graph mode off: does nothing.
void stamp_new_session(const Session& s, std::vector<std::string> parents, std::string op, LineageKind kind,
                       LineageExtras extras = {});

// An operator's output (the loop, compress): its lineage stamped with the two inputs
// as parents, and its legacy provenance (SessionLineage) with the same ids and `op`,
// which shares the lineage's strings while graph mode is on.
void stamp_operator_output(const Session& out, const Session& user, const Session& agent, std::string op,
                           LineageKind kind, LineageExtras extras = {});

}  // namespace rath::lineage
