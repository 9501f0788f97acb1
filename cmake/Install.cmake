# Installation and packaging of librma: libraries, public headers, a CMake
# package (find_package(rma CONFIG) -> rma::rma, rma::rma_static) and a
# pkg-config file (rma.pc). Included at the end of the top-level
# CMakeLists.txt, after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RMA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/rma"
    CACHE STRING "Where rmaConfig.cmake is installed, relative to the prefix")
set(RMA_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where rma.pc is installed, relative to the prefix")
mark_as_advanced(RMA_INSTALL_CMAKEDIR RMA_INSTALL_PKGCONFIGDIR)

# rma_headers is the INTERFACE target both libraries link publicly; it goes
# into the export set with them so the imported targets carry the include
# directory and the C++20 requirement.
install(TARGETS rma rma_static rma_headers
  EXPORT rmaTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime
    NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# Public headers: include/rma/*.hpp (and the C API's *.h once it exists).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rma
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT development
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

install(EXPORT rmaTargets
  NAMESPACE rma::
  FILE rmaTargets.cmake
  DESTINATION ${RMA_INSTALL_CMAKEDIR}
  COMPONENT development)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/rmaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/rmaConfig.cmake
  INSTALL_DESTINATION ${RMA_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/packaging/rmaConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/packaging/rmaConfig.cmake
  ${PROJECT_BINARY_DIR}/packaging/rmaConfigVersion.cmake
  DESTINATION ${RMA_INSTALL_CMAKEDIR}
  COMPONENT development)

# pkg-config. Paths are relative to the .pc file's own location (pcfiledir)
# so the tree stays correct when installed with `cmake --install --prefix`
# or DESTDIR; absolute install dirs are written as they are.
set(_rma_pc_dir "${RMA_INSTALL_PKGCONFIGDIR}")
if(IS_ABSOLUTE "${_rma_pc_dir}")
  set(RMA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rma_pc_up "/__prefix__/${_rma_pc_dir}" "/__prefix__")
  string(REGEX REPLACE "/$" "" _rma_pc_up "${_rma_pc_up}")
  set(RMA_PC_PREFIX "\${pcfiledir}/${_rma_pc_up}")
endif()
foreach(_d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(RMA_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(RMA_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/rma.pc.in ${PROJECT_BINARY_DIR}/packaging/rma.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/rma.pc
  DESTINATION ${RMA_INSTALL_PKGCONFIGDIR}
  COMPONENT development)
unset(_rma_pc_dir)
unset(_rma_pc_up)
