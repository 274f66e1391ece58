rath_add_test_suite(async LABELS "async;tsan")
