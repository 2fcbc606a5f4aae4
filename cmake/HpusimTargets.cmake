# hpusim_add_library(NAME SOURCES... [DEPS ...]) : a static library with the repository root
# on its include path, so headers are included as "hw/hbm/controller.h".
function(hpusim_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# hpusim_add_gtest(NAME SOURCES... [DEPS ...] LABEL tier [GOLDEN_FILTER pattern]) : a GoogleTest
# executable. ctest runs every TEST in its own process, because SystemC elaborates once per
# process. Its tests carry the ctest label `tier` (unit, timing, formula, golden, e2e); those whose
# names match the gtest pattern GOLDEN_FILTER (e.g. "*Golden*") carry `golden` instead.
set(HPUSIM_TEST_TIERS unit timing formula golden e2e python)
function(hpusim_add_gtest name)
  cmake_parse_arguments(ARG "" "LABEL;GOLDEN_FILTER" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL IN_LIST HPUSIM_TEST_TIERS)
    message(FATAL_ERROR "hpusim_add_gtest(${name}): LABEL must be one of ${HPUSIM_TEST_TIERS}, not '${ARG_LABEL}'")
  endif()
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/support/test_main.cpp)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock hpusim_systemc)
  # Tests find the built program and the source tree through these definitions.
  target_compile_definitions(${name} PRIVATE HPUSIM_BINARY_DIR="${PROJECT_BINARY_DIR}"
                                             HPUSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  set(environment "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1")
  if(ARG_GOLDEN_FILTER)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "${ARG_GOLDEN_FILTER}"
      TEST_LIST ${name}_golden_tests PROPERTIES ENVIRONMENT "${environment}" LABELS golden)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${ARG_GOLDEN_FILTER}"
      TEST_LIST ${name}_tests PROPERTIES ENVIRONMENT "${environment}" LABELS ${ARG_LABEL})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES ENVIRONMENT "${environment}" LABELS ${ARG_LABEL})
  endif()
endfunction()

# hpusim_embed_text_files(OUTPUT cpp FILES ... HEADER h NAMESPACE ns FUNCTION fn TYPE t
#                         KEY STEM|NAME COMMENT text) : a generated C++ source that holds the files'
# text, returned by `const std::vector<t>& ns::fn()` as {key, text} entries (presets, kernels).
set(HPUSIM_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_text_files.cmake)
function(hpusim_embed_text_files)
  cmake_parse_arguments(ARG "" "OUTPUT;HEADER;NAMESPACE;FUNCTION;TYPE;KEY;COMMENT" "FILES" ${ARGN})
  string(REPLACE ";" "|" inputs "${ARG_FILES}")
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} "-DINPUTS=${inputs}" -DHEADER=${ARG_HEADER}
            -DNAMESPACE=${ARG_NAMESPACE} -DFUNCTION=${ARG_FUNCTION} -DTYPE=${ARG_TYPE} -DKEY=${ARG_KEY}
            -P ${HPUSIM_EMBED_SCRIPT}
    DEPENDS ${ARG_FILES} ${HPUSIM_EMBED_SCRIPT}
    COMMENT "${ARG_COMMENT}"
    VERBATIM)
endfunction()
