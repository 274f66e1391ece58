rath_add_test_suite(conformance LABELS "backend;conformance" TIMEOUT 900)
