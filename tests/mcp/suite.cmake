rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson rath::fake_llm)
# Every recorded MCP sample in ../shared/fixtures/mcp (or $RATH_FIXTURES_DIR/mcp)
# replayed through the client's layers.
if(TARGET test_mcp)
  add_test(NAME mcp_fixtures COMMAND test_mcp --test-suite=mcp_fixtures --no-intro=true)
  set_tests_properties(mcp_fixtures PROPERTIES TIMEOUT 120 LABELS "mcp"
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
endif()
# The client program the official conformance suite drives (tests/mcp/conformance_client.sh).
rath_add_test_helper(rath_mcp_conformance_client mcp mcp_conformance_client.cpp)
# Every client scenario of the official conformance suite for 2025-11-25 (auth
# included) against that program; skipped (77) without Node 22 outside CI.
if(TARGET rath_mcp_conformance_client)
  add_test(NAME mcp_conformance_client
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mcp/conformance_client.sh $<TARGET_FILE:rath_mcp_conformance_client>
            ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/mcp_conformance_client)
  set_tests_properties(mcp_conformance_client PROPERTIES TIMEOUT 1200 LABELS "mcp;integration" SKIP_RETURN_CODE 77)
endif()

# A small real MCP server over stdio, well-behaved or misbehaving one way (--mode).
rath_add_test_helper(mcp_test_server mcp mcp_test_server.cpp)
