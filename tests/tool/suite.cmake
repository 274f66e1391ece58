rath_add_test_suite(tool LABELS "tool;tsan" TIMEOUT 900)
