# The core's own tests (owned by the core): unit label, host backend, plus the
# .cuda registration of the skip test to prove cuda tests skip without a device.
mf_add_check_test(test_core SOURCES unit/test_core.c LABELS unit)
mf_add_check_test(test_core_memory SOURCES unit/test_core_memory.c LABELS unit memory)
mf_add_check_test(test_harness SOURCES unit/test_harness.c LABELS unit)
mf_add_check_test(test_harness_backend SOURCES unit/test_harness_backend.c LABELS unit BACKENDS host cuda)
# A run selecting only a test case whose path is unavailable (mf_test_tcase_needing) returns 77: checked by
# the test's main, which then exits 0.
add_test(NAME test_harness_needs.host COMMAND test_harness_backend)
set_tests_properties(test_harness_needs.host PROPERTIES LABELS "unit;host" TIMEOUT 60
                     ENVIRONMENT "MF_TEST_BACKEND=host;CK_RUN_CASE=needs_unavailable")
# The memfix command: in-process (test-only ops) and end to end (the binary).
mf_add_check_test(test_tool SOURCES unit/test_tool.c LABELS unit TIMEOUT 300)
target_link_libraries(test_tool PRIVATE mf_cli)
target_compile_definitions(test_tool PRIVATE MF_TOOL_PATH="$<TARGET_FILE:memfix-cli>")
add_dependencies(test_tool memfix-cli)
# Every registered op's built-in cases through the registry (what `memfix report` runs).
if(MF_HAVE_HOST_KERNELS)
  # No hidden synchronization: a second op call does no cudaMalloc/cudaFree/synchronization (cudahost's call counters).
  mf_add_check_test(test_no_sync SOURCES unit/test_no_sync.c LABELS unit memory BACKENDS host TIMEOUT 300)
  target_include_directories(test_no_sync PRIVATE ${MF_ROOT}/cudahost/include ${MF_ROOT}/src/core)
  mf_add_check_test(test_registry SOURCES unit/test_registry.c LABELS unit equivalence memory BACKENDS host cuda TIMEOUT 300)
endif()
