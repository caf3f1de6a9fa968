# Helpers shared by every directory.
#
# tailor_add_unit_tests(DIR LIBS...)
#   Every DIR/*_test.c becomes a cmocka executable and a ctest case named
#   after the file (quantity_test -> unit.quantity).  Set TAILOR_TEST_PREFIX
#   (e.g. "launcher_") before the call to prefix both, so two services may
#   each have a test file of the same name.
#
# tailor_add_fuzzers(DIR LIBS...)
#   Every DIR/*_fuzz.c becomes a libFuzzer target when TAILOR_FUZZ is on
#   (and a dependency of the target `fuzzers`).
#
# tailor_module(NAME [DEPS module...] [LIBS target...])
#   common/NAME as the static library tlr_NAME: every NAME/*.c that is not
#   a *_test.c or *_fuzz.c.  Only NAME's own folder is on its include path,
#   and it is PUBLIC, so a module sees its own headers and those of the
#   modules it names in DEPS (and what they name, transitively) - an
#   include of any other module's header fails to compile.  LIBS are the
#   outside libraries its sources use.  docs/architecture.md draws the
#   graph.

function(tailor_add_unit_tests dir)
  if(NOT TAILOR_BUILD_TESTS)
    return()
  endif()
  file(GLOB tests CONFIGURE_DEPENDS ${dir}/*_test.c)
  foreach(src ${tests})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "_test$" "" short ${name})
    set(name ${TAILOR_TEST_PREFIX}${name})
    set(short ${TAILOR_TEST_PREFIX}${short})
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE ${ARGN} PkgConfig::CMOCKA)
    add_test(NAME unit.${short} COMMAND ${name})
    set_tests_properties(unit.${short} PROPERTIES LABELS unit TIMEOUT 120
      ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=STDOUT;TAILOR_SHARED_DATA=${TAILOR_SHARED_DATA}")
  endforeach()
endfunction()

function(tailor_add_fuzzers dir)
  if(NOT TAILOR_FUZZ)
    return()
  endif()
  file(GLOB fuzzers CONFIGURE_DEPENDS ${dir}/*_fuzz.c)
  foreach(src ${fuzzers})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE ${ARGN})
    add_dependencies(fuzzers ${name})
    # A short run is part of the suite; corpora live beside the target.
    set(corpus ${dir}/corpus/${name})
    add_test(NAME fuzz.${name}
      COMMAND ${CMAKE_SOURCE_DIR}/scripts/run-fuzz.sh $<TARGET_FILE:${name}> ${corpus})
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endfunction()

# Where the shared data set lives (../shared/data beside the checkout).
get_filename_component(TAILOR_SHARED_DATA "${CMAKE_SOURCE_DIR}/../shared/data" ABSOLUTE)

function(tailor_module name)
  cmake_parse_arguments(M "" "" "DEPS;LIBS" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${name})
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.c)
  list(FILTER srcs EXCLUDE REGEX "_(test|fuzz)\\.c$")
  add_library(tlr_${name} STATIC ${srcs})
  target_include_directories(tlr_${name} PUBLIC ${dir})
  set(deps)
  foreach(d ${M_DEPS})
    list(APPEND deps tlr_${d})
  endforeach()
  target_link_libraries(tlr_${name} PUBLIC ${deps} ${M_LIBS})
endfunction()
