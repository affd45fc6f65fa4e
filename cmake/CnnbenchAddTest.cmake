# cnnbench_add_test(NAME SOURCES a.cpp ... [LIBS lib ...] [LABELS gpu ...])
#
# Registers a GoogleTest executable; every TEST becomes one ctest test carrying
# LABELS. A test that calls GTEST_SKIP() is reported by ctest as skipped (not
# passed): GPU tests skip that way, with their reason, where no GPU is present.
include(GoogleTest)
find_package(GTest REQUIRED)

function(cnnbench_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main cnnbench_warnings)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE
    CNNBENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}" CNNBENCH_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set(_labels ${T_LABELS})
  if(NOT _labels)
    set(_labels cpu)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 120
    PROPERTIES LABELS "${_labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endfunction()
