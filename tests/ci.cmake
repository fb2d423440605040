# The GPU runner's script without a GPU (label ci): `ci/gpu.sh --dry-run` on this build lists
# every cuda-labelled test with the command, working directory, environment and resource groups the
# runner would run it with, and fails if there is none, one has no command (the list keeps the
# empty fields of a test with no ENVIRONMENT) or one does not ask for a GPU of its own.
add_test(NAME ci.gpu_dry_run COMMAND ${MF_ROOT}/ci/gpu.sh --dry-run)
set_tests_properties(ci.gpu_dry_run PROPERTIES LABELS ci TIMEOUT 120
  ENVIRONMENT "MF_GPU_BUILD_DIR=${CMAKE_BINARY_DIR}"
  PASS_REGULAR_EXPRESSION "ci/gpu.sh --dry-run: [1-9][0-9]* cuda tests, 0 without a command, 0 without a GPU of their own")

# Its parallel mode without a GPU: the dry run with three fake GPUs (the resource spec, -j 3, every
# cuda test asking for one), then CTest itself running six cuda runs of a harness test with that
# spec, each taking its GPU as CUDA_VISIBLE_DEVICES (tests/gpu_resource_test.sh).
add_test(NAME ci.gpu_resource_groups
         COMMAND bash ${MF_ROOT}/tests/gpu_resource_test.sh ${CMAKE_BINARY_DIR} $<TARGET_FILE:test_harness_backend>)
set_tests_properties(ci.gpu_resource_groups PROPERTIES LABELS ci TIMEOUT 300)
