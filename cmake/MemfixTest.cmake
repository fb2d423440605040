# mf_add_check_test(<name> SOURCES <files...> LABELS <labels...> [BACKENDS host cuda] [TIMEOUT s]
#                   [ENVIRONMENT VAR=value...] [REVERSE <tcase>])
#
# Builds one Check executable <name> (linking memfix, mf_test_support, Check)
# and registers it with CTest once per backend:
#   <name>.host  labels: LABELS + host, environment MF_TEST_BACKEND=host
#   <name>.cuda  labels: LABELS + cuda, environment MF_TEST_BACKEND=cuda,
#                SKIP_RETURN_CODE 77 (mf_test_run returns 77 without a device)
# BACKENDS defaults to host. TIMEOUT (default 120 s) is the CTest timeout and
# also Check's per-test default timeout (CK_DEFAULT_TIMEOUT), which would
# otherwise be 4 s. ENVIRONMENT adds variables to every registration.
# REVERSE <tcase> also registers <name>_reverse.host: the Check test case
# <tcase> in host mode with the threads of each block run in reverse order
# (CUDAHOST_THREAD_ORDER=reverse: a missing or misplaced __syncthreads shows up
# as a mismatch), labels LABELS + host + reverse, with the same sanitizer
# environment and timeout.
# Labels: unit, equivalence, memory, host, cuda, slow, reverse. Relative
# SOURCES are relative to tests/ (the directory of tests/CMakeLists.txt).
#
# mf_add_op_tests(<op> [REVERSE <tcase>] [EQUIV_TIMEOUT s])
# An op's standard suites, from tests/<kind>/test_<op>_<kind>.c:
#   test_<op>_fixtures  the reference against PyTorch fixtures (equivalence; no kernels needed)
#   test_<op>_equiv     the optimized variants against the reference (equivalence, host and cuda;
#                       REVERSE <tcase>: plus the reverse-thread-order registration; default build:
#                       plus test_<op>_equiv_a100_tc.host, the A100 profile and truncating tensor cores)
#   test_<op>_memory    the memory ceilings (memory, host and cuda; default build: plus
#                       test_<op>_memory_a100_tc.host)
#   test_<op>_badinput  bad input (unit, host and cuda)
set(MF_TEST_KNOWN_LABELS unit equivalence memory host cuda slow reverse)

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

# The sanitizer's options every test gets in an MF_SANITIZER build (bad-input tests ask for SIZE_MAX
# bytes and expect MF_ERR_OUT_OF_MEMORY; TSan's suppressions: tests/support/tsan.supp).
set(MF_SANITIZER_TEST_ENV "")
if(MF_SANITIZER STREQUAL "address")
  set(MF_SANITIZER_TEST_ENV "ASAN_OPTIONS=allocator_may_return_null=1")
elseif(MF_SANITIZER STREQUAL "thread")
  # with clang, its runtime's own suppressions too (tests/support/tsan_clang.supp: one file, as TSan reads one)
  set(_mf_tsan_supp ${PROJECT_SOURCE_DIR}/tests/support/tsan.supp)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    file(READ ${PROJECT_SOURCE_DIR}/tests/support/tsan.supp _mf_s1)
    file(READ ${PROJECT_SOURCE_DIR}/tests/support/tsan_clang.supp _mf_s2)
    set(_mf_tsan_supp ${CMAKE_BINARY_DIR}/tsan_clang_all.supp)
    file(WRITE ${_mf_tsan_supp} "${_mf_s1}${_mf_s2}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
      ${PROJECT_SOURCE_DIR}/tests/support/tsan.supp ${PROJECT_SOURCE_DIR}/tests/support/tsan_clang.supp)
  endif()
  # MF_TEST_SANITIZER=thread: an op's equivalence suite (mf_test_add_op_cases) runs the op's report
  # cases only, every variant and dtype at small shapes (TSan is 20-50x slower; the rest of the
  # sweep runs in the default and ASan builds).
  set(MF_SANITIZER_TEST_ENV
      "TSAN_OPTIONS=allocator_may_return_null=1:suppressions=${_mf_tsan_supp}"
      "MF_TEST_SANITIZER=thread")
endif()

function(mf_add_check_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;REVERSE" "SOURCES;LABELS;BACKENDS;ENVIRONMENT" ${ARGN})
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

  set(extra_env ${ARG_ENVIRONMENT} ${MF_SANITIZER_TEST_ENV})
  foreach(backend IN LISTS ARG_BACKENDS)
    add_test(NAME ${name}.${backend} COMMAND ${name})
    set_tests_properties(${name}.${backend} PROPERTIES
      LABELS "${ARG_LABELS};${backend}"
      TIMEOUT ${ARG_TIMEOUT}
      SKIP_RETURN_CODE 77
      ENVIRONMENT "MF_TEST_BACKEND=${backend};CK_DEFAULT_TIMEOUT=${ARG_TIMEOUT};MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps;${extra_env}")
  endforeach()
  if(ARG_REVERSE)
    add_test(NAME ${name}_reverse.host COMMAND ${name})
    set_tests_properties(${name}_reverse.host PROPERTIES
      LABELS "${ARG_LABELS};host;reverse"
      TIMEOUT ${ARG_TIMEOUT}
      SKIP_RETURN_CODE 77
      ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=${ARG_REVERSE};CK_DEFAULT_TIMEOUT=${ARG_TIMEOUT};MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps;${extra_env}")
  endif()
endfunction()

function(mf_add_op_tests op)
  cmake_parse_arguments(ARG "" "REVERSE;EQUIV_TIMEOUT" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mf_add_op_tests(${op}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_EQUIV_TIMEOUT)
    set(ARG_EQUIV_TIMEOUT 300)
  endif()
  set(reverse)
  if(ARG_REVERSE)
    set(reverse REVERSE ${ARG_REVERSE})
  endif()
  mf_add_check_test(test_${op}_fixtures SOURCES equivalence/test_${op}_fixtures.c LABELS equivalence TIMEOUT 60)
  if(MF_HAVE_HOST_KERNELS)
    mf_add_check_test(test_${op}_equiv SOURCES equivalence/test_${op}_equiv.c LABELS equivalence
                      BACKENDS host cuda TIMEOUT ${ARG_EQUIV_TIMEOUT} ${reverse})
    mf_add_check_test(test_${op}_memory SOURCES memory/test_${op}_memory.c LABELS memory
                      BACKENDS host cuda TIMEOUT 120)
    mf_add_check_test(test_${op}_badinput SOURCES unit/test_${op}_badinput.c LABELS unit
                      BACKENDS host cuda TIMEOUT 60)
    # The equivalence suite again as an A100 would run it (default build only: the sanitizer legs run the
    # same code): CUDAHOST_DEVICE=a100 (compute capability 8.0: no wgmma path, 166,912 B of shared memory per
    # block, static + dynamic) and CUDAHOST_MMA_ARITH=truncate (the tensor cores' aligned, truncated sums in
    # blocks of 8 products instead of host mode's fp32 sums): every tolerance must hold for that arithmetic.
    # The memory suite too (the scratch of the paths an A100 takes).
    if(NOT MF_SANITIZER AND TEST test_${op}_equiv.host)
      foreach(_kind equiv memory)
        get_test_property(test_${op}_${_kind}.host ENVIRONMENT _env)
        get_test_property(test_${op}_${_kind}.host TIMEOUT _timeout)
        get_test_property(test_${op}_${_kind}.host LABELS _labels)
        add_test(NAME test_${op}_${_kind}_a100_tc.host COMMAND test_${op}_${_kind})
        set_tests_properties(test_${op}_${_kind}_a100_tc.host PROPERTIES LABELS "${_labels}"
                             TIMEOUT ${_timeout} SKIP_RETURN_CODE 77
                             ENVIRONMENT "${_env};CUDAHOST_DEVICE=a100;CUDAHOST_MMA_ARITH=truncate")
      endforeach()
    endif()
  endif()
endfunction()
