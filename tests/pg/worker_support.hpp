#pragma once
// rath-worker processes for the pg suite: a config file naming an agent served by an
// in-process rath::fake_llm::Server, and worker children whose stdout is drained (and
// kept) by a thread so that a chatty worker never blocks on a full pipe. The children
// get SIGKILL when the test process dies (child_process.hpp's die_with_parent): a
// crashed test leaves no worker behind.
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/pg/connection.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rath::test {

// config.json (0600) with provider "fake" (the server) and the given "agents" section.
inline std::filesystem::path write_fake_llm_config(const std::filesystem::path& dir, const fake_llm::Server& llm,
                                                   boost::json::object agents) {
    boost::json::object doc{
        {"version", 1},
        {"llm",
         {{"default_provider", "fake"},
          {"providers",
           {{"fake",
             {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", "sk-fake-local"},
              {"base_url", llm.base_url()}}}}}}},
        {"agents", std::move(agents)}};
    auto path = dir / "config.json";
    std::ofstream(path) << boost::json::serialize(doc);
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
}

// Agent "echo" (its system prompt is fixed: a single-process run builds the same agent
// from the same file).
inline std::filesystem::path write_worker_config(const std::filesystem::path& dir, const fake_llm::Server& llm) {
    return write_fake_llm_config(
        dir, llm, {{"echo", {{"system_prompt", "You repeat what you are told."}, {"max_tool_rounds", 4}}}});
}

// Agent "shell": the built-in tools on the local sandbox backend, with `idempotent_tools`
// as the agent's "idempotent_tools".
inline std::filesystem::path write_tool_worker_config(const std::filesystem::path& dir, const fake_llm::Server& llm,
                                                      boost::json::object idempotent_tools = {}) {
    return write_fake_llm_config(dir, llm,
                                 {{"shell",
                                   {{"system_prompt", "You run the commands you are asked to."},
                                    {"max_tool_rounds", 4},
                                    {"backend", "local"},
                                    {"idempotent_tools", std::move(idempotent_tools)}}}});
}

class WorkerProcess {
public:
    WorkerProcess(const std::string& conninfo, const std::string& schema, const std::string& queue,
                  const std::filesystem::path& config, const std::string& owner, int lease_ms = 2000,
                  std::vector<std::string> extra = {}, const std::string& netns = {},
                  const std::string& program = "rath-worker") {
        std::vector<std::string> args{"--conninfo", conninfo, "--schema", schema, "--queue", queue, "--config",
                                      config.string(), "--owner", owner, "--lease-ms", std::to_string(lease_ms)};
        args.insert(args.end(), extra.begin(), extra.end());
        child_ = spawn_with_stdout_pipe(std::string(RATH_BINARY_DIR) + "/bin/" + program, std::move(args),
                                        SpawnOptions{.die_with_parent = true, .netns = netns});
        reader_ = std::thread([this] {
            char buf[512];
            for (ssize_t n; (n = ::read(child_.out_fd, buf, sizeof buf)) > 0;) {
                std::lock_guard lk(mu_);
                out_.append(buf, static_cast<std::size_t>(n));
            }
        });
    }
    ~WorkerProcess() {
        if (!exited_) {
            ::kill(child_.pid, SIGKILL);
            (void)wait_exit_code(child_.pid);
        }
        reader_.join();
        ::close(child_.out_fd);
    }
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    std::string output() const {
        std::lock_guard lk(mu_);
        return out_;
    }
    // True once `text` appeared on the worker's stdout within `limit`.
    bool wait_for_output(const std::string& text, std::chrono::milliseconds limit = std::chrono::seconds(30)) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (output().find(text) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }
    // Sends `sig` and returns the exit code (128 + signal when it ended by one).
    int signal_and_wait(int sig) {
        ::kill(child_.pid, sig);
        exited_ = true;
        return wait_exit_code(child_.pid);
    }
    pid_t pid() const noexcept { return child_.pid; }

private:
    SpawnedChild child_;
    std::thread reader_;
    mutable std::mutex mu_;
    std::string out_;
    bool exited_ = false;
};

// What the runs of a queue came to, beside the same inputs run by the same agent in
// this process (the single-process reference).
struct RunsVersusReference {
    std::size_t runs = 0, done = 0, with_output = 0;
    std::size_t mismatched = 0;  // outputs whose text, row count or usage differ from the reference
    std::string first_mismatch;
    long long rows = 0, reference_rows = 0;      // transcript rows of the outputs
    long long tokens = 0, reference_tokens = 0;  // total_tokens of the outputs' usage
    std::size_t taken_over = 0;                  // runs claimed more than once
};

// Reads every run of `queue` (payload {"agent": "echo", "message": ...}) with its output
// session's row count, usage and last row's text in one query, and compares each with
// the echo agent of `config` run here on the same message. The reference calls the model
// of `config`: give it a server of its own when a test counts the workers' requests.
inline RunsVersusReference compare_with_single_process(const std::string& conninfo, const std::string& schema,
                                                       const std::string& queue, const std::filesystem::path& config) {
    auto& rt = async::Runtime::default_runtime();
    pg::Connection db({.conninfo = conninfo});
    const std::string s = "\"" + schema + "\"";
    pg::Result r = async::block_on(
        rt, db.query("SELECT r.state, r.attempts, r.payload->>'message', o.id IS NOT NULL,"
                     " (SELECT count(*) FROM " + s + ".rath_chunks c WHERE c.session_id = o.id),"
                     " o.trailer->'cumulative_usage'->>'prompt_tokens', o.trailer->'cumulative_usage'->>'completion_tokens',"
                     " o.trailer->'cumulative_usage'->>'total_tokens',"
                     " (SELECT t.content FROM " + s + ".rath_transcript t WHERE t.session_id = o.id ORDER BY t.idx DESC LIMIT 1)"
                     " FROM " + s + ".rath_runs r LEFT JOIN " + s + ".rath_sessions o"
                     " ON o.id = (r.result->>'session_id')::uuid WHERE r.queue = $1 ORDER BY r.id",
                     {queue}));
    auto store = std::make_shared<config::ConfigStore>(config);
    flow::Agent agent = flow::make_config_agent(flow::find_config_agent(*store, "echo"), store);
    std::vector<Session> reference;
    reference.reserve(r.rows.size());
    for (const auto& row : r.rows) reference.push_back(agent(Session::from_user_message(row.at(2).value_or(""))));
    RunsVersusReference out;
    auto num = [](const pg::Param& p) { return p ? std::stoll(*p) : -1LL; };
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        const auto& row = r.rows[i];
        ++out.runs;
        if (row.at(0) == pg::Param("done")) ++out.done;
        if (num(row.at(1)) > 1) ++out.taken_over;
        if (row.at(3) != pg::Param("t")) continue;
        ++out.with_output;
        const Session& ref = reference[i];
        const auto usage = ref.usage().value_or(llm::TokenUsage{});
        const long long ref_rows = static_cast<long long>(ref.chunks().size());
        out.rows += num(row.at(4));
        out.reference_rows += ref_rows;
        out.tokens += num(row.at(7));
        out.reference_tokens += usage.total_tokens;
        const bool same = num(row.at(4)) == ref_rows && num(row.at(5)) == usage.prompt_tokens &&
                          num(row.at(6)) == usage.completion_tokens && num(row.at(7)) == usage.total_tokens &&
                          row.at(8) == ref.text();
        if (!same && out.mismatched++ == 0)
            out.first_mismatch = "message '" + row.at(2).value_or("") + "': stored text '" + row.at(8).value_or("<null>") +
                                 "', " + std::to_string(num(row.at(4))) + " rows, " + std::to_string(num(row.at(7))) +
                                 " tokens; reference '" + ref.text().value_or("<null>") + "', " + std::to_string(ref_rows) + " rows, " +
                                 std::to_string(usage.total_tokens) + " tokens";
    }
    return out;
}

// Finished (done or failed) runs of `queue`, or -1 while the database cannot be reached.
inline long long finished_runs(pg::Connection& db, const std::string& schema, const std::string& queue) {
    try {
        pg::Result r = async::block_on(async::Runtime::default_runtime(),
                                       db.query("SELECT count(*) FROM \"" + schema +
                                                    "\".rath_runs WHERE queue = $1 AND state IN ('done', 'failed')",
                                                {queue}));
        return std::stoll(*r.rows.at(0).at(0));
    } catch (const pg::PgError&) {
        return -1;
    }
}

}  // namespace rath::test
