rath_add_test_suite(session LABELS "session;tsan" TIMEOUT 300)

# The child process of the kill -9 durability test: writes rows through the async
# writer and reports each acknowledged row on stdout.
add_executable(session_kill9_child ${CMAKE_CURRENT_SOURCE_DIR}/session/helpers/kill9_child.cpp)
target_link_libraries(session_kill9_child PRIVATE rath::rath)
target_include_directories(session_kill9_child PRIVATE ${PROJECT_SOURCE_DIR})
rath_target_defaults(session_kill9_child)
if(TARGET test_session)
  add_dependencies(test_session session_kill9_child)
endif()
