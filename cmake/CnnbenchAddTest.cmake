# cnnbench_add_test(NAME SOURCES a.cpp ... [LIBS lib ...] [LABELS gpu ...])
#
# Registers a GoogleTest executable.
#  - CPU tests: every TEST becomes one ctest test carrying LABELS (cpu).
#  - Tests labelled gpu: the executable is one ctest test (one process, so one
#    CUDA context and one cuDNN load for all its cases, which cost seconds each
#    on a GPU host). Its main (tests/gpu_test_main.cpp) exits 77 when any case
#    skipped and none failed, which ctest reports as skipped (SKIP_RETURN_CODE),
#    never as passed: where no GPU is present every gpu test shows as skipped
#    with its reason in the output. Failures fail. gpu tests hold the resource
#    lock "gpu", so that `ctest -j` never runs two on one device at once.
include(GoogleTest)
find_package(GTest REQUIRED)

add_library(cnnbench_gpu_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/gpu_test_main.cpp)
target_link_libraries(cnnbench_gpu_test_main PUBLIC GTest::gtest)

function(cnnbench_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  set(_labels ${T_LABELS})
  if(NOT _labels)
    set(_labels cpu)
  endif()
  if("gpu" IN_LIST _labels)
    set(_main cnnbench_gpu_test_main)
  else()
    set(_main GTest::gtest_main)
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock ${_main} cnnbench_warnings)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE
    CNNBENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}" CNNBENCH_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if("gpu" IN_LIST _labels)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES
      LABELS "${_labels}" SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu)
  else()
    gtest_discover_tests(${name}
      DISCOVERY_TIMEOUT 120
      PROPERTIES LABELS "${_labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endif()
endfunction()
