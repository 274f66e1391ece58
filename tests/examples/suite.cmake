# Every example runs offline (fake LLM server in-process) and its output is checked.
set(rath_example_checks
  "01_hello_agent|--- tokens: total="
  "02_session_lineage|resumed session equals the original: true"
  "03_sandbox_backend|\\[local\\].*The sandbox answered: .*hello from the workspace.*\\[opensandbox\\] rath-sandbox-server at http://127.0.0.1:[0-9]+.*cat hello.txt +exit=0 stdout=hello from the remote sandbox.*The sandbox answered: .*Linux.*sandbox closed: true"
  "04_builtin_tools|list_workspace_files.*agent transcript \\(7 rows\\).*now reads: .*buy milk.*6 \\* 7 is 42"
  "06_mcp|tools from server-everything: .*get-sum.*echo -> .*Echo: hello from mcp.*answer: The MCP server says: .*The sum of 20 and 22 is 42.*server connections made: 1"
  "05_custom_tool|committed the agent's run to memory: memory://session/[0-9a-f-]+/commits/.*compressed transcript:.*\\[0\\] user: 'The user asked for a word count"
  "07_streaming|\\[finish_reason=stop\\].*--- usage total="
  "08_compress|--- chunks after compression: 1"
  "09_memory|recall returned 2 hit\\(s\\):\n +1\\.312  memory://user/memories/preferences/[0-9a-f]+\n +0\\.000  .*\\[untrusted memory:memory://user/memories/preferences/[0-9a-f]+\\] The user prefers a dark colour theme at night\\..*answer: .+\n\\[ok\\] committed the turn transcript into memory at memory://session/.*store closed: true"
  "10_provider_variation|provider_kind=anthropic"
  "11_dynamic_selector|round 2 -> wrap-up and goodbye"
  "12_compile|Reachable provider models: \\['fake-model'\\].*  - billing.agent: model=fake-model memory=true.*  - router: selector.*caught: workflow pre-flight validation failed:\n  - agent 'billing.agent': unknown provider_kind='gemini'.*\n  - agent 'tech.agent': user tool 'run_shell_command' shadows a built-in system tool\n  - input session: unknown sandbox backend 'docker'.*validate\\(\\) problems: none .* ready to run.*Inside lifecycle: 4 agents ready \\(1 memory store held, refcount 2\\).*answer: Restart the router.*Resources released on exit \\(refcount 1\\).*store closed: true"
  "14_runtime_fanout|fan-out: 100000 coroutines"
  "00_demo|sessions     200 \\(0 errors\\).*viewer \\(open in a browser\\) -> .*/lineage.html")
# The server-everything copy pinned in tests/integration/npm (scripts/install-deps.sh
# --test) for example 06, run by Node 22 from .deps when present, else by `node` on PATH;
# a missing one fails the test.
set(rath_node22 ${PROJECT_SOURCE_DIR}/.deps/node22/node_modules/node/bin/node)
if(EXISTS ${rath_node22})
  set(rath_node ${rath_node22})
else()
  find_program(rath_node node)
  if(NOT rath_node)
    set(rath_node node)
  endif()
endif()
set(rath_mcp_example_args ${rath_node}
    ${PROJECT_SOURCE_DIR}/tests/integration/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio)

foreach(check ${rath_example_checks})
  string(REPLACE "|" ";" parts "${check}")
  list(GET parts 0 example)
  list(GET parts 1 expected)
  if(TARGET ${example})
    set(args)
    if(example STREQUAL "00_demo")
      set(args 200 ${CMAKE_CURRENT_BINARY_DIR}/demo-out)
    endif()
    if(example STREQUAL "06_mcp")
      set(args ${rath_mcp_example_args})
    endif()
    add_test(NAME example_${example} COMMAND ${example} ${args} WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(example_${example} PROPERTIES
      ENVIRONMENT "RATH_EXAMPLES_OFFLINE=1"
      PASS_REGULAR_EXPRESSION "${expected}"
      TIMEOUT 300
      LABELS "examples")
  endif()
endforeach()

# examples/13_agent_service as a process against the fake LLM server (every route,
# cancellation, overload, SIGTERM).
# The suite needs the example itself, so it exists only when examples are built (the
# sanitizer builds leave them out).
if(TARGET 13_agent_service)
  rath_add_test_suite(examples LABELS "examples" LIBS rath::fake_llm TIMEOUT 300)
  add_dependencies(test_examples 13_agent_service 01_hello_agent)
endif()

# rath replay of every session the model-calling examples record (OPENRATH_RECORD_LLM=1):
# each must replay without divergence (replay_examples.cmake). 02 and 14 call no model;
# 13 is a service, tested as a process in test_examples.
if(TARGET rath)
  set(rath_replay_examples)
  foreach(example 00_demo 01_hello_agent 03_sandbox_backend 04_builtin_tools 05_custom_tool 06_mcp 07_streaming
                  08_compress 09_memory 10_provider_variation 11_dynamic_selector 12_compile)
    if(TARGET ${example})
      list(APPEND rath_replay_examples $<TARGET_FILE:${example}>)
    endif()
  endforeach()
  if(rath_replay_examples)
    string(JOIN "|" rath_replay_examples ${rath_replay_examples})
    add_test(NAME examples_replay
      COMMAND ${CMAKE_COMMAND} "-DEXAMPLES=${rath_replay_examples}" -DRATH=$<TARGET_FILE:rath>
              "-DARGS_06_mcp=${rath_mcp_example_args}" "-DARGS_00_demo=20;demo-out"
              -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/replay -P ${CMAKE_CURRENT_SOURCE_DIR}/examples/replay_examples.cmake)
    set_tests_properties(examples_replay PROPERTIES TIMEOUT 900 LABELS "examples;cli")
  endif()
endif()
