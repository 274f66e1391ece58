rath_add_test_suite(memory LABELS "memory;tsan" TIMEOUT 300 LIBS rath::testing rath::fake_llm)

# The child of the two-process writer test: opens a store by path and writes through it.
rath_add_test_helper(memory_writer_child memory writer_child.cpp)
