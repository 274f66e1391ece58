include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(rath_installed_targets rath_async rath_net rath_rath rath_testing)
if(TARGET rath_pg)
  list(APPEND rath_installed_targets rath_pg)
endif()
install(TARGETS ${rath_installed_targets} EXPORT rathTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# rath/pg/ and rath/cluster/ declare rath::pg, which exists only when libpq was found.
if(TARGET rath_pg)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rath DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
else()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rath DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN "pg" EXCLUDE PATTERN "cluster" EXCLUDE)
endif()
install(EXPORT rathTargets NAMESPACE rath:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rath)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rathConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rathConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rath)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rathConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rathConfig.cmake ${PROJECT_BINARY_DIR}/rathConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rath)
