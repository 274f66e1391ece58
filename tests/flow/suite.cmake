rath_add_test_suite(flow LABELS "flow;tsan" LIBS rath::testing rath::fake_llm)
# config_agents_test starts the MCP test server (tests/mcp/helpers).
add_dependencies(test_flow mcp_test_server)
