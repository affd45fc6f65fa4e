# cnnbench_require_cudnn_version(INCLUDE_DIR MINIMUM)
#
# Reads CUDNN_MAJOR/MINOR/PATCHLEVEL from cudnn_version.h in INCLUDE_DIR and stops
# the configure, naming the header, the version found and the minimum, when it is
# older than MINIMUM ("9.0.0"). Sets CNNBENCH_CUDNN_VERSION ("9.19.0") in the caller.
#
# The minimum is the oldest cuDNN whose graph API has every attribute the
# backend uses unconditionally; enumerators added later (ENGINECFG_WORKSPACE_SIZE
# in 9.2, the CUBLASLT_DEPENDENCY behaviour note in 9.15, ...) are guarded by
# CUDNN_VERSION in the code.
function(cnnbench_require_cudnn_version include_dir minimum)
  set(_header "${include_dir}/cudnn_version.h")
  if(NOT EXISTS "${_header}")
    message(FATAL_ERROR "cuDNN: ${_header} not found next to cudnn.h; cuDNN ${minimum} or newer "
                        "is needed (set CUDNN_ROOT to its installation)")
  endif()
  file(STRINGS "${_header}" _lines REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  set(_major "")
  set(_minor "")
  set(_patch "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "CUDNN_MAJOR +([0-9]+)")
      set(_major "${CMAKE_MATCH_1}")
    elseif(_line MATCHES "CUDNN_MINOR +([0-9]+)")
      set(_minor "${CMAKE_MATCH_1}")
    elseif(_line MATCHES "CUDNN_PATCHLEVEL +([0-9]+)")
      set(_patch "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(_major STREQUAL "" OR _minor STREQUAL "" OR _patch STREQUAL "")
    message(FATAL_ERROR "cuDNN: cannot read CUDNN_MAJOR/MINOR/PATCHLEVEL from ${_header}")
  endif()
  set(_found "${_major}.${_minor}.${_patch}")
  if(_found VERSION_LESS "${minimum}")
    message(FATAL_ERROR "cuDNN ${_found} (${_header}) is too old: cnnbench needs cuDNN ${minimum} "
                        "or newer (the graph API of cuDNN 9). Install a newer cuDNN or point "
                        "CUDNN_ROOT at one.")
  endif()
  set(CNNBENCH_CUDNN_VERSION "${_found}" PARENT_SCOPE)
endfunction()
