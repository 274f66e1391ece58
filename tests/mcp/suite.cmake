rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson rath::testing rath::fake_llm)
# The server the official conformance suite runs its server scenarios against.
rath_add_test_helper(rath-mcp-conformance-server mcp conformance_server.cpp)
# Every server scenario of the official conformance suite (2025-11-25) against it; needs
# Node 22 and the npm packages of scripts/install-deps.sh --test.
add_test(NAME mcp_server_conformance
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/npm/mcp_server_conformance.sh
                 $<TARGET_FILE:rath-mcp-conformance-server>)
set_tests_properties(mcp_server_conformance PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS "mcp;integration")
# The official TypeScript SDK client drives rath-mcp-serve over stdio and Streamable HTTP
# (tools, an agent on rath-fake-llm, its transcript resource).
add_test(NAME mcp_sdk_interop
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/npm/mcp_sdk_interop.sh
                 $<TARGET_FILE:rath-mcp-serve> $<TARGET_FILE:rath-fake-llm>)
set_tests_properties(mcp_sdk_interop PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS "mcp;integration")
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
# rath-mcp-serve documents itself.
add_test(NAME rath_mcp_serve_help COMMAND rath-mcp-serve --help)
set_tests_properties(rath_mcp_serve_help PROPERTIES LABELS "mcp"
  PASS_REGULAR_EXPRESSION "--builtin-tools.*--agent NAME.*--http.*--allow-origin.*\"agents\"")
