rath_add_test_suite(backend LABELS "backend" TIMEOUT 900)
