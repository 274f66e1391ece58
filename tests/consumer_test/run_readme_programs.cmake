# Every C++ program shown in README.md builds against the installed package and runs as
# shown. A program is a ```cpp block containing "int main"; the other blocks are
# fragments. Each is built as its own project with find_package(rath) against a scratch
# install prefix, then run with OPENAI_BASE_URL pointing at rath-fake-llm (a dummy key),
# so a program that reads its provider from the environment runs offline. A program
# that sets its own base_url or api_key cannot be redirected: it is compiled only.
#   -DRATH_BINARY_DIR=... -DREADME=... -DWORK_DIR=... -DGENERATOR=... -DFAKE_LLM=...
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/scratch_install.cmake)

file(READ ${README} text)
set(programs 0)
set(fence_open "```cpp\n")
set(fence_close "\n```")
string(LENGTH "${fence_open}" open_len)
while(TRUE)
  string(FIND "${text}" "${fence_open}" at)
  if(at EQUAL -1)
    break()
  endif()
  math(EXPR body_at "${at} + ${open_len}")
  string(SUBSTRING "${text}" ${body_at} -1 text)
  string(FIND "${text}" "${fence_close}" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "README.md: a ```cpp block is not closed")
  endif()
  string(SUBSTRING "${text}" 0 ${end} block)
  string(SUBSTRING "${text}" ${end} -1 text)
  string(FIND "${block}" "int main" has_main)
  if(has_main EQUAL -1)
    continue()
  endif()
  if(programs EQUAL 0)
    run(${CMAKE_COMMAND} --install ${RATH_BINARY_DIR} --prefix ${prefix})
  endif()
  math(EXPR programs "${programs} + 1")
  set(dir ${WORK_DIR}/program_${programs})
  file(WRITE ${dir}/main.cpp "${block}\n")
  file(WRITE ${dir}/CMakeLists.txt
    "cmake_minimum_required(VERSION 3.25)\n"
    "project(readme_program LANGUAGES CXX)\n"
    "set(CMAKE_CXX_STANDARD 20)\n"
    "find_package(rath REQUIRED)\n"
    "add_executable(program main.cpp)\n"
    "target_link_libraries(program PRIVATE rath::rath)\n")
  run(${CMAKE_COMMAND} -S ${dir} -B ${dir}/build -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${dir}/build RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "README program ${programs} does not compile against the installed rath:\n"
                        "${block}\n---\n${out}\n${err}")
  endif()
  string(REGEX MATCH "base_url|api_key" own_endpoint "${block}")
  if(own_endpoint)
    message(STATUS "README program ${programs}: compiled (sets its own endpoint: not run)")
    continue()
  endif()
  # The fake server on a free port; its first line names the port. The shell owns both
  # processes and ends the server by its pid.
  set(script [=[
set -e
"$FAKE_LLM" --port 0 --quiet > "$WORK/fake.out" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for i in $(seq 1 500); do grep -q listening "$WORK/fake.out" && break; sleep 0.01; done
url=$(sed -n 's/^listening on //p' "$WORK/fake.out")
test -n "$url"
env -u OPENAI_DEFAULT_MODEL -u ANTHROPIC_API_KEY OPENAI_API_KEY=sk-readme-offline OPENAI_BASE_URL="$url/v1" \
  RATH_THREADS=2 "$PROGRAM"
]=])
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env FAKE_LLM=${FAKE_LLM} WORK=${dir} PROGRAM=${dir}/build/program
            sh -c "${script}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "README program ${programs} failed offline (${rc}):\n${block}\n---\n${out}\n${err}")
  endif()
  string(STRIP "${out}" stripped)
  if(stripped STREQUAL "")
    message(FATAL_ERROR "README program ${programs} printed nothing offline:\n${block}\n---\n${err}")
  endif()
  message(STATUS "README program ${programs} ran offline: ${stripped}")
endwhile()
if(programs EQUAL 0)
  message(FATAL_ERROR "README.md shows no whole program (a ```cpp block with int main)")
endif()
message(STATUS "README programs checked: ${programs}")
