// 15 — a rath worker with your own C++ tools and agents. The stock rath-worker runs the
// agents of config.json, whose tools are the built-ins and what MCP servers serve. This
// program is the same worker (the same flags, see --help) with a C++ tool linked in and
// an agent defined in code, both run durably on runs that any process submits:
//
//   15_cluster_worker --conninfo "host=db dbname=rath" --config config.json --concurrency 8
//
//   // anywhere else:
//   rath::cluster::Client cluster({.conninfo = "host=db dbname=rath"});
//   rath::Session out = cluster.submit("orders", rath::Session::from_user_message("Where is A-1001?")).get();
//
// Needs PostgreSQL (rath::pg): tests/pg/worker_program_test.cpp runs it against a
// private server and the fake LLM.
#include <rath/cluster/worker.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>

#include <map>
#include <string>
#include <unistd.h>

struct OrderQuery {
    std::string order_id;
};
BOOST_DESCRIBE_STRUCT(OrderQuery, (), (order_id))

// The tool: C++ code of yours, called in the worker process that runs the agent. It only
// reads, so it is idempotent: a worker taking over a run cut short during a call of it
// calls it again instead of reporting the call interrupted.
rath::tool::FlowToolPtr lookup_order_tool() {
    return rath::tool::make_tool<OrderQuery>(
        "lookup_order", "Look up an order's status by its id.",
        [](rath::Session, OrderQuery q) {
            static const std::map<std::string, std::string> statuses{{"A-1001", "shipped"}, {"A-1002", "refunded"}};
            auto it = statuses.find(q.order_id);
            return boost::json::value{{"order_id", q.order_id},
                                      {"status", it == statuses.end() ? "unknown" : it->second},
                                      {"worker_pid", static_cast<long long>(::getpid())}};
        },
        {.parallel_safe = true, .idempotent = true, .blocking = false,
         .field_descriptions = {{"order_id", "The order id, e.g. A-1001."}}});
}

int main(int argc, char** argv) {
    rath::cluster::WorkerSetup setup;
    // Config agents may name it: "agents": {"desk": {"system_prompt": "...", "tools": ["lookup_order"]}}.
    setup.tools = {lookup_order_tool()};
    // An agent in code, by name; its provider is the config's default (llm.default_provider).
    setup.agents["orders"] = {.system_prompt = "You answer questions about orders. Look them up with lookup_order.",
                              .options = {.loop = {.tools = {lookup_order_tool()}, .max_tool_rounds = 4},
                                          .description = "Answers questions about orders."}};
    return rath::cluster::worker_main(argc, argv, std::move(setup));
}
