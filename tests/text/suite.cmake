rath_add_test_suite(text LABELS "text")
