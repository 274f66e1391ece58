// rath-fake-llm: the standalone binary of the program also run as `rath fake-llm`.
#include <rath/fake_llm/program.hpp>

int main(int argc, char** argv) { return rath::fake_llm::program_main(argc, argv); }
