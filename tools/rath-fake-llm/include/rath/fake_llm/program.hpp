#pragma once
// The whole rath-fake-llm program as a function, so that the standalone binary and
// `rath fake-llm` run the same code: parses argv (argv[0] is ignored), serves until
// SIGINT/SIGTERM (or the end of stdin for a stdio server), returns the exit code.
// Call once per process: it sets signal dispositions and masks.
namespace rath::fake_llm {

int program_main(int argc, char** argv);

}  // namespace rath::fake_llm
