# Runs the mcp_fixtures suite against a sample set other than the shared one: one
# stdio recording and one content block (with their .expect.json files) copied into a
# fresh directory named by RATH_FIXTURES_DIR. The suite must check exactly those two.
#   -DTEST_MCP=<test_mcp binary> -DSOURCE_FIXTURES=<default fixtures dir> -DWORK_DIR=<scratch>
if(DEFINED ENV{RATH_FIXTURES_DIR} AND NOT "$ENV{RATH_FIXTURES_DIR}" STREQUAL "")
  set(SOURCE_FIXTURES "$ENV{RATH_FIXTURES_DIR}")
endif()
set(subset "${WORK_DIR}/mcp-fixture-subset")
file(REMOVE_RECURSE "${subset}")
file(MAKE_DIRECTORY "${subset}/mcp")
foreach(stem spec_tools_call_is_error content_block_image)
  file(GLOB files "${SOURCE_FIXTURES}/mcp/${stem}.*")
  if(NOT files)
    message(FATAL_ERROR "sample ${stem} not found under ${SOURCE_FIXTURES}/mcp")
  endif()
  file(COPY ${files} DESTINATION "${subset}/mcp")
endforeach()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "RATH_FIXTURES_DIR=${subset}"
          "${TEST_MCP}" --test-suite=mcp_fixtures --no-intro=true
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
file(REMOVE_RECURSE "${subset}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mcp_fixtures failed on the two-sample set (exit ${rc})")
endif()
if(NOT out MATCHES "mcp samples checked: 2")
  message(FATAL_ERROR "mcp_fixtures did not check exactly the two samples it was given")
endif()
