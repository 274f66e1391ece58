rath_add_test_suite(config LABELS "config")
