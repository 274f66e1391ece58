# Runs the wire_fixtures suite against a sample set other than the shared one: two
# samples (one OpenAI, one Anthropic, with their .expect/.meta files) copied into a
# fresh directory named by RATH_FIXTURES_DIR. The suite must check exactly those two.
#   -DTEST_LLM=<test_llm binary> -DSOURCE_FIXTURES=<default fixtures dir> -DWORK_DIR=<scratch>
if(DEFINED ENV{RATH_FIXTURES_DIR} AND NOT "$ENV{RATH_FIXTURES_DIR}" STREQUAL "")
  set(SOURCE_FIXTURES "$ENV{RATH_FIXTURES_DIR}")
endif()
set(subset "${WORK_DIR}/fixture-subset")
file(REMOVE_RECURSE "${subset}")
foreach(sample openai/chat_nonstream_text.json anthropic/messages_stream_text_ping.sse)
  get_filename_component(dir "${sample}" DIRECTORY)
  get_filename_component(name "${sample}" NAME)
  string(REGEX REPLACE "\\.(json|sse)$" "" stem "${name}")
  file(MAKE_DIRECTORY "${subset}/wire/${dir}")
  foreach(f "${name}" "${stem}.expect.json" "${stem}.meta.json")
    if(EXISTS "${SOURCE_FIXTURES}/wire/${dir}/${f}")
      file(COPY "${SOURCE_FIXTURES}/wire/${dir}/${f}" DESTINATION "${subset}/wire/${dir}")
    endif()
  endforeach()
  if(NOT EXISTS "${subset}/wire/${sample}")
    message(FATAL_ERROR "sample ${sample} not found under ${SOURCE_FIXTURES}/wire")
  endif()
endforeach()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "RATH_FIXTURES_DIR=${subset}"
          "${TEST_LLM}" --test-suite=wire_fixtures --no-intro=true
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
file(REMOVE_RECURSE "${subset}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "wire_fixtures failed on the two-sample set (exit ${rc})")
endif()
if(NOT out MATCHES "wire samples checked: 2")
  message(FATAL_ERROR "wire_fixtures did not check exactly the two samples it was given")
endif()
