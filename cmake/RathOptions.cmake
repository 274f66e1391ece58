# Compiler flags shared by every target of ours.
add_library(rath_warnings INTERFACE)
target_compile_options(rath_warnings INTERFACE -Wall -Wextra -Werror)
# GCC 12 reports bogus -Wstringop-overflow / -Wrestrict / -Warray-bounds inside libstdc++'s std::string
# at -O2/-O3 (GCC PR 105329, 105651); they fire on plain string concatenation.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(rath_warnings INTERFACE -Wno-stringop-overflow -Wno-restrict -Wno-array-bounds)
endif()

add_library(rath_sanitizers INTERFACE)
if(RATH_SANITIZE AND RATH_TSAN)
  message(FATAL_ERROR "RATH_SANITIZE and RATH_TSAN are mutually exclusive")
endif()
if(RATH_SANITIZE OR RATH_TSAN)
  # Instrumented builds make GCC 12 report false positives inside Beast's parser and
  # on Asio coroutine frames; they are not diagnostics about our code.
  target_compile_options(rath_warnings INTERFACE -Wno-maybe-uninitialized -Wno-mismatched-new-delete -Wno-format-truncation)
endif()
if(RATH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(RATH_TSAN)
  # GCC warns that atomic_thread_fence is not instrumented; Asio uses fences internally.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
  add_link_options(-fsanitize=thread)
endif()

# Asio configuration for rath's own translation units, not passed on to the projects that
# link rath: Asio's concepts only constrain templates (no layout, no symbol changes), so
# a consumer may compile with them while rath's build keeps them off.
add_library(rath_asio_build INTERFACE)
target_compile_definitions(rath_asio_build INTERFACE BOOST_ASIO_DISABLE_CONCEPTS)

# Gives a target of ours the warning flags and the Asio configuration above, only while
# rath itself is built: an installed target passes neither on.
function(rath_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:rath_warnings> $<BUILD_INTERFACE:rath_asio_build>)
endfunction()
