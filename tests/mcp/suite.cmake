rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson rath::fake_llm)
# Every recorded MCP sample in ../shared/fixtures/mcp (or $RATH_FIXTURES_DIR/mcp)
# replayed through the client's layers.
if(TARGET test_mcp)
  add_test(NAME mcp_fixtures COMMAND test_mcp --test-suite=mcp_fixtures --no-intro=true)
  set_tests_properties(mcp_fixtures PROPERTIES TIMEOUT 120 LABELS "mcp"
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
  # The same suite pointed (RATH_FIXTURES_DIR) at another, smaller sample set.
  add_test(NAME mcp_fixtures_other_set
    COMMAND ${CMAKE_COMMAND} -DTEST_MCP=$<TARGET_FILE:test_mcp>
            -DSOURCE_FIXTURES=${PROJECT_SOURCE_DIR}/../shared/fixtures
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/mcp/run_fixture_subset.cmake)
  set_tests_properties(mcp_fixtures_other_set PROPERTIES TIMEOUT 120 LABELS "mcp")
endif()

# A small real MCP server over stdio, well-behaved or misbehaving one way (--mode).
rath_add_test_helper(mcp_test_server mcp mcp_test_server.cpp)
