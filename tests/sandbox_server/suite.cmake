# rath-sandbox-server: its pure parts (state machine, request models, files over a root
# descriptor, multipart, ranges) and a real server with real bubblewrap sandboxes.
if(TARGET rath::sandbox_server)
  rath_add_test_suite(sandbox_server LIBS rath::sandbox_server LABELS "sandbox_server" TIMEOUT 600)
endif()

# The official OpenSandbox SDK (tests/integration/npm, pinned) against a
# rath-sandbox-server process. Exits 77 (skipped) with the reason when node, the npm
# packages, bwrap or root are missing on a developer machine; under RATH_CI it fails.
if(TARGET rath-sandbox-server)
  add_test(NAME sandbox_server_opensandbox_sdk
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/npm/run_opensandbox.sh $<TARGET_FILE:rath-sandbox-server>)
  set_tests_properties(sandbox_server_opensandbox_sdk PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       LABELS "sandbox_server;integration")
endif()

# The crash case starts the program itself.
if(TARGET test_sandbox_server AND TARGET rath-sandbox-server)
  add_dependencies(test_sandbox_server rath-sandbox-server)
endif()
