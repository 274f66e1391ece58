# `rath replay` of every session the examples that talk to a model record: each example
# runs offline (RATH_EXAMPLES_OFFLINE=1: the in-process fake LLM server) with recording
# on (OPENRATH_RECORD_LLM=1) and its own OPENRATH_HOME under WORK_DIR; then every
# *.llm.jsonl it left is replayed, and each replay must report no divergence (exit 0).
# An example that leaves no recording fails too: it was listed because it calls a model.
#
#   cmake -DEXAMPLES=<exe>|<exe>... -DRATH=<rath> -DWORK_DIR=<dir> -P replay_examples.cmake
string(REPLACE "|" ";" examples "${EXAMPLES}")
if(NOT examples)
  message(FATAL_ERROR "no examples given")
endif()
set(ENV{OPENRATH_RECORD_LLM} 1)
set(ENV{RATH_EXAMPLES_OFFLINE} 1)
set(failures "")
set(replayed 0)
foreach(exe ${examples})
  get_filename_component(name "${exe}" NAME)
  set(dir "${WORK_DIR}/${name}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  set(ENV{OPENRATH_HOME} "${dir}/home")
  execute_process(COMMAND "${exe}" WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0)
    string(APPEND failures "\n${name} exited with ${rc}:\n${out}${err}")
    continue()
  endif()
  file(GLOB_RECURSE recordings "${dir}/*.llm.jsonl")
  if(NOT recordings)
    string(APPEND failures "\n${name} left no recording (*.llm.jsonl) under ${dir}")
    continue()
  endif()
  foreach(rec ${recordings})
    execute_process(COMMAND "${RATH}" replay "${rec}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                    TIMEOUT 120)
    math(EXPR replayed "${replayed} + 1")
    if(NOT rc EQUAL 0)
      string(APPEND failures "\nrath replay ${rec} (${name}) exited with ${rc}:\n${out}${err}")
    endif()
  endforeach()
  list(LENGTH recordings n)
  message(STATUS "${name}: ${n} recorded session(s) replayed")
endforeach()
if(failures)
  message(FATAL_ERROR "replay of the examples' recorded sessions failed:${failures}")
endif()
message(STATUS "replayed ${replayed} recorded sessions: no divergence")
