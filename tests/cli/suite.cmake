# The rath command, run as a child process on sessions the tests persist through the
# library (and the one examples/02 persists), a config.json they write, the fake LLM
# server and rath-mcp-serve as an MCP server. Built only with CLI11
# (tools/CMakeLists.txt); CI requires it.
if(TARGET rath)
  rath_add_test_suite(cli LABELS "cli" LIBS rath::testing rath::fake_llm)
  add_dependencies(test_cli rath rath-mcp-serve)
  if(TARGET 02_session_lineage)
    add_dependencies(test_cli 02_session_lineage)
    target_compile_definitions(test_cli PRIVATE RATH_CLI_EXAMPLE_02=1)
  endif()
endif()
