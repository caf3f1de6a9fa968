# Helpers shared by every directory.
#
# tailor_add_unit_tests(DIR LIBS...)
#   Every DIR/*_test.c becomes a cmocka executable and a ctest case named
#   after the file (quantity_test -> unit.quantity).  Set TAILOR_TEST_PREFIX
#   (e.g. "launcher_") before the call to prefix both, so two services may
#   each have a test file of the same name.
#
# tailor_add_fuzzers(DIR LIBS...)
#   Every DIR/*_fuzz.c becomes a libFuzzer target when TAILOR_FUZZ is on.

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
    # A short run is part of the suite; corpora live beside the target.
    set(corpus ${dir}/corpus/${name})
    add_test(NAME fuzz.${name}
      COMMAND ${CMAKE_SOURCE_DIR}/scripts/run-fuzz.sh $<TARGET_FILE:${name}> ${corpus})
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endfunction()

# Where the shared data set lives (../shared/data beside the checkout).
get_filename_component(TAILOR_SHARED_DATA "${CMAKE_SOURCE_DIR}/../shared/data" ABSOLUTE)
