#pragma once
// The whole rath-mcp-serve program as a function, so that the standalone binary and
// `rath mcp serve` run the same code: parses argv (argv[0] is ignored), serves until
// SIGINT/SIGTERM (or the end of stdin for a stdio server), returns the exit code.
// Call once per process: it sets signal dispositions and masks.
namespace rath::mcp_serve {

int program_main(int argc, char** argv);

}  // namespace rath::mcp_serve
