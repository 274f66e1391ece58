rath_add_test_suite(loop LABELS "loop;tsan")

# The child of the exit test: returns from main with sessions in flight.
add_executable(loop_exit_child ${CMAKE_CURRENT_SOURCE_DIR}/loop/helpers/exit_child.cpp)
target_link_libraries(loop_exit_child PRIVATE rath::rath)
target_include_directories(loop_exit_child PRIVATE ${PROJECT_SOURCE_DIR})
rath_target_defaults(loop_exit_child)
if(TARGET test_loop)
  add_dependencies(test_loop loop_exit_child)
endif()
