# The dependency arrows of ARCHITECTURE.md, checked on the sources themselves:
#
#   rmaapi -> engine's SDK (include/rma/sdk) <- {engine internals, verbs, dpdk, shm}
#
# Run as a script (cmake -DSOURCE_DIR=<tree> [-DSTAMP=<file>] -P check_layers.cmake).
# Every quoted #include of a file in a layer must start with one of the
# roots that layer may use, and only dpdk/port may include DPDK (<rte_*.h>).
# Include roots on the compiler's command line cannot say this on their own:
# several layers share a root (engine/ holds the providers' kit and the
# registration cache side by side), so the check reads what each file asks
# for. A violation stops the build with the file, the line and the rule.
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: pass -DSOURCE_DIR=<source tree>")
endif()

# layer folder | quoted include roots it may use
set(_rules
  "include/rma/sdk|rma/sdk/ rma/version.hpp"
  "include/rma|rma/"
  "engine/rcache|rma/sdk/ rma/version.hpp rcache/"
  "engine/bootstrap|rma/sdk/ rma/version.hpp bootstrap/"
  "engine/endpoint|rma/sdk/ endpoint/"
  "engine/stats|rma/sdk/ stats/"
  "engine/node|rma/sdk/ node/"
  "engine/swkit|rma/sdk/ swkit/ rcache/"
  "engine/self|rma/sdk/ self/ swkit/"
  "engine|rma/sdk/ rma/version.hpp rcache/ bootstrap/ endpoint/ stats/ swkit/ self/ node/ builtin_providers"
  "rmaapi|rma/ window/ datatype/ comm/ shmem/"
  "dpdk/wire|rma/sdk/ wire/"
  "dpdk/link|rma/sdk/ wire/ link/"
  "dpdk/rc|rma/sdk/ wire/ link/ rc/ swkit/"
  "dpdk/port|rma/sdk/ wire/ link/ port/"
  "dpdk/provider|rma/sdk/ wire/ link/ rc/ port/ provider/ swkit/ stats/"
  "verbs|rma/sdk/ verbs/ swkit/"
  "shm|rma/sdk/ shm/ swkit/"
)

set(_violations "")
set(_checked 0)
foreach(rule IN LISTS _rules)
  string(REPLACE "|" ";" _parts "${rule}")
  list(GET _parts 0 _layer)
  list(GET _parts 1 _allowed)
  string(REPLACE " " ";" _allowed "${_allowed}")
  file(GLOB_RECURSE _files LIST_DIRECTORIES false
       "${SOURCE_DIR}/${_layer}/*.cpp" "${SOURCE_DIR}/${_layer}/*.hpp"
       "${SOURCE_DIR}/${_layer}/*.h" "${SOURCE_DIR}/${_layer}/*.in")
  foreach(f IN LISTS _files)
    # A file belongs to the most specific layer that names its folder.
    file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${f}")
    set(_owner "")
    foreach(r2 IN LISTS _rules)
      string(REPLACE "|" ";" _p2 "${r2}")
      list(GET _p2 0 _l2)
      string(LENGTH "${_l2}" _n2)
      string(LENGTH "${_owner}" _n)
      string(FIND "${_rel}" "${_l2}/" _at)
      if(_at EQUAL 0 AND _n2 GREATER _n)
        set(_owner "${_l2}")
      endif()
    endforeach()
    if(NOT _owner STREQUAL _layer)
      continue()
    endif()
    math(EXPR _checked "${_checked} + 1")
    file(STRINGS "${f}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS _lines)
      if(line MATCHES "#[ \t]*include[ \t]*<(rte_[^>]*)>")
        if(NOT _layer STREQUAL "dpdk/port")
          list(APPEND _violations "${_rel}: includes <${CMAKE_MATCH_1}>: only dpdk/port may include DPDK")
        endif()
        continue()
      endif()
      if(NOT line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
        continue()
      endif()
      set(_inc "${CMAKE_MATCH_1}")
      set(_ok FALSE)
      foreach(a IN LISTS _allowed)
        string(FIND "${_inc}" "${a}" _pos)
        if(_pos EQUAL 0)
          set(_ok TRUE)
          break()
        endif()
      endforeach()
      # A header next to the including file (no folder) stays inside the layer.
      if(NOT _ok AND NOT _inc MATCHES "/")
        get_filename_component(_dir "${f}" DIRECTORY)
        if(EXISTS "${_dir}/${_inc}")
          set(_ok TRUE)
        endif()
      endif()
      if(NOT _ok)
        string(REPLACE ";" ", " _list "${_allowed}")
        list(APPEND _violations "${_rel}: includes \"${_inc}\": ${_layer} may include ${_list} only")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_violations)
  list(LENGTH _violations _count)
  string(REPLACE ";" "\n  " _text "${_violations}")
  message(FATAL_ERROR "layering: ${_count} include(s) point the wrong way "
                      "(see ARCHITECTURE.md, Layers):\n  ${_text}")
endif()
if(STAMP)
  file(WRITE "${STAMP}" "${_checked} files checked\n")
endif()
message(STATUS "layering: ${_checked} files follow the dependency arrows")
