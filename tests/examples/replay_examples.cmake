# `rath replay` of every session the examples that talk to a model record: each example
# runs offline (RATH_EXAMPLES_OFFLINE=1: the in-process fake LLM server) with recording
# on (OPENRATH_RECORD_LLM=1) and its own OPENRATH_HOME under WORK_DIR; then every
# *.llm.jsonl it left is replayed, and each replay must report no divergence (exit 0) and
# leave a transcript byte-identical to the original.
# An example that leaves no recording fails too: it was listed because it calls a model.
#
# An example's command-line arguments, when it takes some, come in ARGS_<name> (a list).
#
#   cmake -DEXAMPLES=<exe>|<exe>... -DRATH=<rath> -DWORK_DIR=<dir> [-DARGS_<name>=<a;b>] -P replay_examples.cmake
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
  execute_process(COMMAND "${exe}" ${ARGS_${name}} WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc
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
    execute_process(COMMAND "${RATH}" replay --json --out "${dir}/replayed" "${rec}" RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    math(EXPR replayed "${replayed} + 1")
    if(NOT rc EQUAL 0)
      string(APPEND failures "\nrath replay ${rec} (${name}) exited with ${rc}:\n${out}${err}")
      continue()
    endif()
    # Checked here too, not only by rath: the replayed file is the original, byte for byte.
    string(JSON original GET "${out}" transcript)
    string(JSON copy GET "${out}" replayed_transcript)
    file(SHA256 "${original}" original_sum)
    file(SHA256 "${copy}" copy_sum)
    if(NOT original_sum STREQUAL copy_sum)
      string(APPEND failures "\n${copy} (${name}) is not byte-identical to ${original}")
    endif()
  endforeach()
  list(LENGTH recordings n)
  message(STATUS "${name}: ${n} recorded session(s) replayed")
endforeach()
if(failures)
  message(FATAL_ERROR "replay of the examples' recorded sessions failed:${failures}")
endif()
message(STATUS "replayed ${replayed} recorded sessions: no divergence")
