# The GPU runner's script without a GPU (label ci): `ci/gpu.sh --dry-run` on this build lists
# every cuda-labelled test with the command, working directory and environment the runner would
# run it with, and fails if there is none or one has no command (its tab-separated list once
# merged empty fields and lost the commands of the tests with no ENVIRONMENT).
add_test(NAME ci.gpu_dry_run COMMAND ${MF_ROOT}/ci/gpu.sh --dry-run)
set_tests_properties(ci.gpu_dry_run PROPERTIES LABELS ci TIMEOUT 120
  ENVIRONMENT "MF_GPU_BUILD_DIR=${CMAKE_BINARY_DIR}"
  PASS_REGULAR_EXPRESSION "ci/gpu.sh --dry-run: [1-9][0-9]* cuda tests, 0 without a command")
