rath_add_test_suite(conformance LABELS "backend;conformance" TIMEOUT 900)
# The opensandbox runs of every case start a real rath-sandbox-server.
if(TARGET rath-sandbox-server AND TARGET test_conformance)
  add_dependencies(test_conformance rath-sandbox-server)
endif()
