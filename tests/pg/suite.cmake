# rath::pg against a private PostgreSQL server the suite starts itself
# (tests/support/postgres.hpp). Registered only when rath::pg is built (libpq found);
# under RATH_CI configure already failed without libpq, and the suite fails without
# the server binaries.
if(TARGET rath_pg)
  rath_add_test_suite(pg LIBS rath::pg rath::fake_llm LABELS "pg;tsan" TIMEOUT 600
                      ARGS --test-suite-exclude=pg/scale)
  # The scale case (scale_test.cpp: 10,000 runs over three rath-worker processes) on its
  # own: labelled integration, so the sanitizer stages skip it, and run alone, so that
  # its two-core time budget is not shared with other suites.
  add_test(NAME test_pg_scale COMMAND test_pg --no-intro=true --test-suite=pg/scale)
  set_tests_properties(test_pg_scale PROPERTIES TIMEOUT 300 LABELS "pg;integration" RUN_SERIAL TRUE
    ENVIRONMENT "RATH_SOURCE_DIR=${PROJECT_SOURCE_DIR};RATH_BINARY_DIR=${PROJECT_BINARY_DIR}")
endif()
if(TARGET rath_pg)
  # Starts a server and dies without teardown (the guardian test).
  rath_add_test_helper(pg_server_child pg pg_server_child.cpp)
endif()
if(TARGET rath_pg)
  # Claims a run and heartbeats until SIGKILLed (the run queue's kill -9 test).
  rath_add_test_helper(pg_queue_worker pg pg_queue_worker.cpp LIBS rath::pg)
endif()
if(TARGET rath_pg)
  # Spawns children with and without die_with_parent and waits to be killed.
  rath_add_test_helper(spawning_parent pg spawning_parent.cpp)
endif()
if(TARGET rath_pg AND TARGET rath-worker)
  # The worker suite spawns build/bin/rath-worker.
  add_dependencies(test_pg rath-worker)
endif()
if(TARGET rath_pg)
  # examples/15_cluster_worker (a worker program with its own C++ tool and agent), built
  # here too so that the sanitizer builds, which leave the examples out, run its code.
  add_executable(cluster_worker_example ${PROJECT_SOURCE_DIR}/examples/15_cluster_worker/main.cpp)
  target_link_libraries(cluster_worker_example PRIVATE rath::pg)
  rath_target_defaults(cluster_worker_example)
  add_dependencies(test_pg cluster_worker_example)
endif()
