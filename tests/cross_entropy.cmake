# Cross-entropy fix (seed 000, bug 1; issue 4): the full-logits reference against
# PyTorch fixtures, the chunked fused linear cross-entropy against the reference
# (forward, fused forward+backward, backward from the saved lse), its memory
# formulas and measured scratch, and bad input. Sources are relative to tests/.

# The reference against the seed's own loss code run by PyTorch: needs no kernels.
mf_add_check_test(test_cross_entropy_fixtures
  SOURCES equivalence/test_cross_entropy_fixtures.c
  LABELS equivalence
  TIMEOUT 60)

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_cross_entropy_equiv
    SOURCES equivalence/test_cross_entropy_equiv.c
    LABELS equivalence
    BACKENDS host cuda
    TIMEOUT 300)
  mf_add_check_test(test_cross_entropy_memory
    SOURCES memory/test_cross_entropy_memory.c
    LABELS memory
    BACKENDS host cuda
    TIMEOUT 120)
  mf_add_check_test(test_cross_entropy_badinput
    SOURCES unit/test_cross_entropy_badinput.c
    LABELS unit
    BACKENDS host cuda
    TIMEOUT 60)

  # The row, reduction and bf16-narrowing kernels again with the threads of each
  # block run in reverse order (cudahost): a missing __syncthreads shows up as a
  # mismatch. A subset of the suite keeps it fast.
  add_test(NAME test_cross_entropy_equiv_reverse.host COMMAND test_cross_entropy_equiv)
  set_tests_properties(test_cross_entropy_equiv_reverse.host PROPERTIES
    LABELS "equivalence;host"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=chunked;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
endif()

# The fused variant's kernels (mma.sync fragments, shared dL/dz tile, the
# per-row-block grad_hidden read-modify-write) with reversed thread order.
if(MF_HAVE_HOST_KERNELS)
  add_test(NAME test_cross_entropy_equiv_fused_reverse.host COMMAND test_cross_entropy_equiv)
  set_tests_properties(test_cross_entropy_equiv_fused_reverse.host PROPERTIES
    LABELS "equivalence;host"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=fused;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
endif()
