rath_add_test_suite(llm LABELS "llm" LIBS simdjson::simdjson rath::testing ZLIB::ZLIB)
# Every real provider wire sample in ../shared/fixtures/wire served through the real clients.
if(TARGET test_llm)
  add_test(NAME wire_fixtures COMMAND test_llm --test-suite=wire_fixtures --no-intro=true)
  set_tests_properties(wire_fixtures PROPERTIES TIMEOUT 300 LABELS "llm"
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
endif()
