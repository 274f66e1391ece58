// rath-worker: the worker program of rath/cluster/worker.hpp with no tools or agents of
// its own: the agents it runs are the config's (tools reach it through their "mcp").
#include <rath/cluster/worker.hpp>

int main(int argc, char** argv) { return rath::cluster::worker_main(argc, argv); }
