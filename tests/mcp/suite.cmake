rath_add_test_suite(mcp LABELS "mcp;tsan" TIMEOUT 600 LIBS simdjson::simdjson rath::testing)
# The server the official conformance suite runs its server scenarios against.
rath_add_test_helper(rath-mcp-conformance-server mcp conformance_server.cpp)
