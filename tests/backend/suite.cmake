rath_add_test_suite(backend LABELS "backend" TIMEOUT 900)
# The opensandbox cases start a real rath-sandbox-server.
if(TARGET rath-sandbox-server AND TARGET test_backend)
  add_dependencies(test_backend rath-sandbox-server)
endif()
