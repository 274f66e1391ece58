# The rath command, run as a child process on sessions the tests persist through the
# library. Built only with CLI11 (tools/CMakeLists.txt); CI requires it.
if(TARGET rath)
  rath_add_test_suite(cli LABELS "cli" LIBS rath::testing)
  add_dependencies(test_cli rath)
endif()
