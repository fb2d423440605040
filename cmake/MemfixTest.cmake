# mf_add_check_test(<name> SOURCES <files...> LABELS <labels...> [BACKENDS host cuda] [TIMEOUT s]
#                   [ENVIRONMENT VAR=value...])
#
# Builds one Check executable <name> (linking memfix, mf_test_support, Check)
# and registers it with CTest once per backend:
#   <name>.host  labels: LABELS + host, environment MF_TEST_BACKEND=host
#   <name>.cuda  labels: LABELS + cuda, environment MF_TEST_BACKEND=cuda,
#                SKIP_RETURN_CODE 77 (mf_test_run returns 77 without a device)
# BACKENDS defaults to host. TIMEOUT (default 120 s) is the CTest timeout and
# also Check's per-test default timeout (CK_DEFAULT_TIMEOUT), which would
# otherwise be 4 s. ENVIRONMENT adds variables to every registration.
# Labels: unit, equivalence, memory, host, cuda, slow. Relative SOURCES are
# relative to tests/ (the directory of tests/CMakeLists.txt).
set(MF_TEST_KNOWN_LABELS unit equivalence memory host cuda slow)

# Sanitizer and coverage builds are Debug and several times slower: scale every
# TIMEOUT (CTest's and Check's) by this factor.
if(MF_SANITIZER STREQUAL "thread")
  set(_mf_default_multiplier 6)
elseif(MF_SANITIZER STREQUAL "address")
  set(_mf_default_multiplier 4)
elseif(MF_COVERAGE)
  set(_mf_default_multiplier 3)
else()
  set(_mf_default_multiplier 1)
endif()
set(MF_TEST_TIMEOUT_MULTIPLIER ${_mf_default_multiplier} CACHE STRING
    "Factor applied to every mf_add_check_test TIMEOUT (sanitizer/coverage builds are slower)")

function(mf_add_check_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LABELS;BACKENDS;ENVIRONMENT" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mf_add_check_test(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mf_add_check_test(${name}): SOURCES is required")
  endif()
  foreach(label IN LISTS ARG_LABELS)
    if(NOT label IN_LIST MF_TEST_KNOWN_LABELS)
      message(FATAL_ERROR "mf_add_check_test(${name}): unknown label '${label}' (known: ${MF_TEST_KNOWN_LABELS})")
    endif()
  endforeach()
  if(NOT ARG_BACKENDS)
    set(ARG_BACKENDS host)
  endif()
  foreach(backend IN LISTS ARG_BACKENDS)
    if(NOT backend MATCHES "^(host|cuda)$")
      message(FATAL_ERROR "mf_add_check_test(${name}): unknown backend '${backend}' (host, cuda)")
    endif()
  endforeach()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * ${MF_TEST_TIMEOUT_MULTIPLIER}")

  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE mf_test_support)
  target_compile_options(${name} PRIVATE ${MF_WARN_FLAGS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

  set(extra_env ${ARG_ENVIRONMENT})
  if(MF_SANITIZER STREQUAL "address")
    # bad-input tests ask for SIZE_MAX bytes and expect MF_ERR_OUT_OF_MEMORY
    list(APPEND extra_env "ASAN_OPTIONS=allocator_may_return_null=1")
  elseif(MF_SANITIZER STREQUAL "thread")
    list(APPEND extra_env "TSAN_OPTIONS=allocator_may_return_null=1:suppressions=${PROJECT_SOURCE_DIR}/tests/support/tsan.supp")
  endif()
  foreach(backend IN LISTS ARG_BACKENDS)
    add_test(NAME ${name}.${backend} COMMAND ${name})
    set_tests_properties(${name}.${backend} PROPERTIES
      LABELS "${ARG_LABELS};${backend}"
      TIMEOUT ${ARG_TIMEOUT}
      SKIP_RETURN_CODE 77
      ENVIRONMENT "MF_TEST_BACKEND=${backend};CK_DEFAULT_TIMEOUT=${ARG_TIMEOUT};MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps;${extra_env}")
  endforeach()
endfunction()
