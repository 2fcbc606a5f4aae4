# hpusim_add_library(NAME SOURCES... [DEPS ...]) : a static library with the repository root
# on its include path, so headers are included as "hw/hbm/controller.h".
function(hpusim_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# hpusim_add_gtest(NAME SOURCES... [DEPS ...]) : a GoogleTest executable. ctest runs every TEST
# in its own process, because SystemC elaborates once per process.
function(hpusim_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/support/test_main.cpp)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock hpusim_systemc)
  # Tests find the built program and the source tree through these definitions.
  target_compile_definitions(${name} PRIVATE HPUSIM_BINARY_DIR="${PROJECT_BINARY_DIR}"
                                             HPUSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1")
endfunction()
