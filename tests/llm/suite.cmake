rath_add_test_suite(llm LABELS "llm" LIBS simdjson::simdjson rath::testing ZLIB::ZLIB)
# Every real provider wire sample in ../shared/fixtures/wire served through the real clients.
if(TARGET test_llm)
  add_test(NAME wire_fixtures COMMAND test_llm --test-suite=wire_fixtures --no-intro=true)
  set_tests_properties(wire_fixtures PROPERTIES TIMEOUT 300 LABELS "llm"
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
  # The same suite pointed (RATH_FIXTURES_DIR) at another, smaller sample set.
  add_test(NAME wire_fixtures_other_set
    COMMAND ${CMAKE_COMMAND} -DTEST_LLM=$<TARGET_FILE:test_llm>
            -DSOURCE_FIXTURES=${PROJECT_SOURCE_DIR}/../shared/fixtures
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/llm/run_fixture_subset.cmake)
  set_tests_properties(wire_fixtures_other_set PROPERTIES TIMEOUT 300 LABELS "llm")
endif()
