// rath-sandbox-server: the standalone binary of the program also run as `rath sandbox serve`.
#include <rath/sandbox_server/program.hpp>

int main(int argc, char** argv) { return rath::sandbox_server::program_main(argc, argv); }
