rath_add_test_suite(fake_llm LIBS rath::fake_llm LABELS "fake_llm;tsan" TIMEOUT 300)

# The official OpenAI and Anthropic npm SDKs against a rath-fake-llm process
# (tests/integration/npm). Exits 77 (skipped) with a printed reason when node or
# node_modules is missing; scripts/install-deps.sh installs node_modules.
if(TARGET rath-fake-llm)
  add_test(NAME fake_llm_npm_sdk
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/npm/run.sh $<TARGET_FILE:rath-fake-llm>)
  set_tests_properties(fake_llm_npm_sdk PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "fake_llm;integration")
endif()
