rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson rath::testing)
