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

# The lineage viewer in a real browser: Debian's chromium driven headless by
# playwright-core (tests/integration/npm) over pages rath writes: the rath command's
# export of example 02's session, the demo's lineage.html and a 10,000-session page
# from the fixture helper. Screenshots land in build/tests/viewer_browser. Missing
# chromium, node or the npm packages: skipped (77) on a developer machine, a failure
# under RATH_CI.
rath_add_test_helper(lineage_viewer_fixture cli lineage_viewer_fixture.cpp)
if(TARGET rath AND TARGET 00_demo AND TARGET 02_session_lineage)
  add_dependencies(test_cli 00_demo)
  add_test(NAME cli_viewer_browser
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/npm/viewer_browser.sh
                   $<TARGET_FILE_DIR:rath> ${CMAKE_CURRENT_BINARY_DIR}/viewer_browser)
  set_tests_properties(cli_viewer_browser PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                       LABELS "cli;browser;integration")
endif()
