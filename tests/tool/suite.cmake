rath_add_test_suite(tool LABELS "tool" TIMEOUT 900)
