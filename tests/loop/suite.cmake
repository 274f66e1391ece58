rath_add_test_suite(loop LABELS "loop;tsan")
