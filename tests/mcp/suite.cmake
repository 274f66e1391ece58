rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 300)
