#pragma once
// rath::cluster::worker_main: the whole rath-worker program as a function, so that a
// worker can link the user's own C++ tools and agents. The stock `rath-worker` binary is
// `worker_main(argc, argv)`; a user's worker is the same program with a WorkerSetup:
//
//   int main(int argc, char** argv) {
//       rath::cluster::WorkerSetup setup;
//       setup.tools = {lookup_order_tool()};   // config agents may name it in "tools"
//       setup.agents["refunds"] = {.system_prompt = "You handle refunds.",
//                                  .options = {.loop = {.tools = {lookup_order_tool()}}}};
//       return rath::cluster::worker_main(argc, argv, std::move(setup));
//   }
//
// The program takes runs from rath's PostgreSQL run queue (rath/pg/run_queue.hpp; what
// rath::cluster::Client enqueues), runs the agent each names on its input, stores the
// output session (rath/pg/session_store.hpp) and completes the run with its id. Agents
// are found by name among `setup.agents` and the "agents" section of the config file
// (rath/flow/config_agents.hpp). Every model response and tool call is recorded in the
// database as it happens, so a worker that takes over a run whose worker died replays
// them instead of calling the model or running a finished tool again. `--help` prints
// the flags, the stdout protocol and the takeover rules.
//
// Tools reach workers in two ways: linked in C++ here, or served by an MCP server that
// the config names (a config agent's "mcp"). Every worker process that may take a run
// must know its agent by the same name with the same tools: a run names only its agent.
//
// Call once per process, from main: it blocks SIGINT/SIGTERM in every thread (a thread
// waits for them and stops the worker after its current runs) and runs until then.
// Returns the exit code: 0 after a clean stop, 1 when the database, the config or an
// agent could not be set up, 2 for a bad command line or a setup that contradicts the
// config (an agent named in both, a config agent naming a tool not linked). Errors of a
// run fail that run (its error text is what Client's RunFailed carries), not the worker.
#include <rath/flow/agent.hpp>
#include <rath/tool/tool_set.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace rath::cluster {

// An agent defined in code, run by name like a config agent.
struct WorkerAgent {
    std::string system_prompt;
    // The agent's options as for flow::Agent. With no provider field set, the provider is
    // the config's default (llm.default_provider), with `options.model` as its model when
    // that is set. A worker sets `options.loop.executor` itself (the durable one).
    flow::AgentOptions options{};
    // As a config agent's "backend": the sandbox a run's input session is placed on.
    std::optional<std::string> backend{};
    // As a config agent's "idempotent_tools": overrides FlowToolCall::idempotent().
    std::map<std::string, bool> idempotent_tools{};
};

struct WorkerSetup {
    // The tools the config's agents may name in their "tools" list.
    tool::ToolSet tools{};
    // Agents by name, beside the config's (a name in both is refused at start).
    std::map<std::string, WorkerAgent, std::less<>> agents{};
};

// Parses argv (argv[0] names the program in messages), runs the worker, returns the exit
// code (see above).
int worker_main(int argc, char** argv, WorkerSetup setup = {});

}  // namespace rath::cluster
