// rath-mcp-serve: the standalone binary of the program also run as `rath mcp serve`.
#include <rath/mcp_serve/program.hpp>

int main(int argc, char** argv) { return rath::mcp_serve::program_main(argc, argv); }
