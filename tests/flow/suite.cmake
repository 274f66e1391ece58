rath_add_test_suite(flow LABELS "flow;tsan" LIBS rath::testing rath::fake_llm)
