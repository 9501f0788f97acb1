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

# What librma links privately (the global property RMA_LIBRARY_DEPS, filled
# by the provider folders) must be findable by consumers of rma::rma_static,
# whose exported link interface names it; the shared library hides it.
# pkg_check_modules() imported targets (PkgConfig::<PREFIX>) are recreated by
# rmaConfig.cmake and their shared-library flags go into Libs.private of
# rma.pc; plain library names become -l flags in Libs.private.
get_property(_rma_deps GLOBAL PROPERTY RMA_LIBRARY_DEPS)
set(RMA_CONFIG_PKG_DEPS "")        # "<PREFIX>=<module>[,<module>...]" per dependency
set(RMA_PC_REQUIRES_PRIVATE "")
set(RMA_PC_LIBS_PRIVATE "-lpthread -ldl")
foreach(_dep IN LISTS _rma_deps)
  if(_dep MATCHES "^PkgConfig::(.+)$")
    set(_prefix "${CMAKE_MATCH_1}")
    # The module list pkg_check_modules() was called with (FindPkgConfig
    # caches it), minus its keywords.
    set(_modules "${__pkg_config_arguments_${_prefix}}")
    list(REMOVE_ITEM _modules REQUIRED QUIET NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH IMPORTED_TARGET GLOBAL)
    if(NOT _modules)
      message(FATAL_ERROR "Install.cmake: cannot tell which pkg-config module ${_dep} came from")
    endif()
    list(JOIN _modules "," _joined)
    list(APPEND RMA_CONFIG_PKG_DEPS "${_prefix}=${_joined}")
    # Not Requires.private: `pkg-config --static libdpdk` expands to every
    # DPDK driver archive and fails on Debian (it wants -lsystemd). A static
    # librma links the dependency's shared libraries, so its plain --libs go
    # into Libs.private (FindPkgConfig caches them as <PREFIX>_LDFLAGS).
    list(JOIN ${_prefix}_LDFLAGS " " _ldflags)
    string(APPEND RMA_PC_LIBS_PRIVATE " ${_ldflags}")
  elseif(TARGET "${_dep}")
    message(FATAL_ERROR "Install.cmake: don't know how to export the dependency ${_dep}; "
                        "use pkg_check_modules(... IMPORTED_TARGET) or a plain library name")
  elseif(_dep MATCHES "^-")
    string(APPEND RMA_PC_LIBS_PRIVATE " ${_dep}")
  else()
    string(APPEND RMA_PC_LIBS_PRIVATE " -l${_dep}")
  endif()
endforeach()
list(JOIN RMA_PC_REQUIRES_PRIVATE ", " RMA_PC_REQUIRES_PRIVATE)
set(RMA_PC_REQUIRES_PRIVATE_LINE "")
if(RMA_PC_REQUIRES_PRIVATE)
  set(RMA_PC_REQUIRES_PRIVATE_LINE "Requires.private: ${RMA_PC_REQUIRES_PRIVATE}")
endif()

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
unset(_rma_deps)
unset(_rma_pc_dir)
unset(_rma_pc_up)
