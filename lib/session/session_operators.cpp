// The graph operators (session.md §1.8) and the Python repr (§1.9).
#include <rath/session.hpp>

#include <rath/backend/backend.hpp>
#include <rath/session/format.hpp>
#include <rath/session/lineage_recorder.hpp>

#include "lib/text/pyrepr.hpp"
#include "lib/session/session_state.hpp"

#include <ostream>

namespace rath {

namespace {

std::string pyrepr_opt(const std::optional<std::string>& s) { return s ? detail::pyrepr(*s) : "None"; }

}  // namespace


Session Session::derive(ChunkTable rows, std::optional<TokenUsage> usage) const {
    backend::SandboxPtr sb;
    std::shared_ptr<const backend::SandboxSpec> spec;
    std::shared_ptr<const llm::Provider> provider;
    SessionOptions o;
    {
        std::lock_guard lk(st_->mu);
        provider = st_->provider;
        const detail::Placement& pl = st_->placed();
        o.sandbox_backend = pl.backend_name;
        spec = pl.spec;
        sb = pl.sandbox;
    }
    o.usage = std::move(usage);
    Session out(std::move(rows), std::move(o));
    if (spec) out.st_->placement().spec = std::move(spec);  // shared, not copied
    out.st_->provider = std::move(provider);                // merge keeps self's
    if (sb && !sb->closed()) {
        try {
            out.bind_sandbox(sb);
        } catch (const backend::BackendSandboxClosed&) {
            // Closed in between: the result stays unbound but keeps the target.
            std::lock_guard lk(out.st_->mu);
            out.st_->placement().target(*sb);
        }
    }
    return out;
}

Session Session::fork() const {
    Session out = derive(chunks(), std::nullopt);
    lineage::stamp_new_session(out, {id()}, "Session.fork", LineageKind::op_fork);
    return out;
}

Session Session::detach() const {
    Session out = derive(chunks(), std::nullopt);
    lineage::stamp_new_session(out, {}, "Session.detach", LineageKind::op_detach);
    return out;
}

Session Session::merge(const Session& other) const {
    bool self_unbound = sandbox() == nullptr;
    bool other_unbound = other.sandbox() == nullptr;
    auto self_backend = sandbox_backend();
    auto other_backend = other.sandbox_backend();
    if (self_unbound && other_unbound && self_backend != other_backend)
        throw SessionError("cannot merge unbound sessions targeting different backends: " + pyrepr_opt(self_backend) +
                           " vs " + pyrepr_opt(other_backend));
    ChunkTable rows = chunks().extend(other.chunks());
    Session out = derive(std::move(rows), sum_token_usage(usage(), other.usage()));
    lineage::stamp_new_session(out, {id(), other.id()}, "Session.merge", LineageKind::op_merge);
    return out;
}

// ---------------------------------------------------------------- repr

std::string Session::repr() const {
    if (pending()) return "Session(pending \xE2\x80\xA6, operator=" + detail::pyrepr(lineage_operator()) + ")";
    ChunkTable t = detail::SessionAccess::raw_chunks(*this);
    std::string block;
    std::size_t n = t.size();
    if (n == 0) {
        block = "[]";
    } else {
        std::vector<std::string> lines;
        if (n <= 9) {
            for (std::size_t i = 0; i < n; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
        } else {
            for (std::size_t i = 0; i < 4; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
            lines.push_back("... (" + std::to_string(n - 8) + " chunks omitted) ...");
            for (std::size_t i = n - 4; i < n; ++i) lines.push_back(format_chunk_row_repr(i, *t[i]));
        }
        block = "[\n    ";
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (i) block += ",\n    ";
            block += lines[i];
        }
        block += "\n  ]";
    }
    return "Session(\n  chunks=" + block + ",\n  operator=" + detail::pyrepr(lineage_operator()) + ",\n)";
}

std::ostream& operator<<(std::ostream& os, const Session& s) { return os << s.repr(); }

}  // namespace rath
