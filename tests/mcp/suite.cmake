rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson)
# Every recorded MCP sample in ../shared/fixtures/mcp (or $RATH_FIXTURES_DIR/mcp)
# replayed through the client's layers.
if(TARGET test_mcp)
  add_test(NAME mcp_fixtures COMMAND test_mcp --test-suite=mcp_fixtures --no-intro=true)
  set_tests_properties(mcp_fixtures PROPERTIES TIMEOUT 120 LABELS "mcp"
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
endif()
