# cmake -DSOURCE_DIR=... -DBINARY_DIR=... -DEXPECT=fail|pass [-DEXPECT_MESSAGE=regex]
#       -DARGS="-DX=Y;-DZ=W" [-DPATH_ENV=...] -P expect_configure.cmake
#
# Configures the project in BINARY_DIR (emptied first) with ARGS and checks that
# the configure fails with EXPECT_MESSAGE in its output, or succeeds.
foreach(var SOURCE_DIR BINARY_DIR EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_configure.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${BINARY_DIR}")
file(MAKE_DIRECTORY "${BINARY_DIR}")
set(_env "")
if(DEFINED PATH_ENV)
  set(_env ${CMAKE_COMMAND} -E env "PATH=${PATH_ENV}" --unset=CUDACXX)
endif()
execute_process(
  COMMAND ${_env} ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G Ninja ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
set(all "${out}\n${err}")
if(EXPECT STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "the configure succeeded but should have failed:\n${all}")
  endif()
  if(NOT EXPECT_MESSAGE STREQUAL "" AND NOT all MATCHES "${EXPECT_MESSAGE}")
    message(FATAL_ERROR "the configure failed without the expected message '${EXPECT_MESSAGE}':\n${all}")
  endif()
  message(STATUS "failed as expected: ${EXPECT_MESSAGE}")
else()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the configure failed (${rc}):\n${all}")
  endif()
  message(STATUS "configured as expected")
endif()
file(REMOVE_RECURSE "${BINARY_DIR}")
