rath_add_test_suite(loop LABELS "loop;tsan" LIBS rath::testing rath::fake_llm)

# The child of the exit test: returns from main with sessions in flight.
rath_add_test_helper(loop_exit_child loop exit_child.cpp LIBS rath::fake_llm)
