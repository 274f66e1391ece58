# The rath command, run as a child process on sessions the tests persist through the
# library, a config.json they write, the fake LLM server and rath-mcp-serve as an MCP
# server. Built only with CLI11 (tools/CMakeLists.txt); CI requires it.
if(TARGET rath)
  rath_add_test_suite(cli LABELS "cli" LIBS rath::testing rath::fake_llm)
  add_dependencies(test_cli rath rath-mcp-serve)
endif()
