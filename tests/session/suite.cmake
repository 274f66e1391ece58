rath_add_test_suite(session LABELS "session;tsan" TIMEOUT 300)

# The child process of the kill -9 durability test: writes rows through the async
# writer and reports each acknowledged row on stdout.
rath_add_test_helper(session_kill9_child session kill9_child.cpp)
