# NPT per-token weight delta (seed 004, issue 6): the reference against PyTorch
# fixtures, equivalence of the factored kernel with the 4D reference (forward
# and every gradient), memory ceilings, bad input. Sources are relative to tests/.

# The reference against the document's einsum and the factored graph in
# PyTorch (fixtures/npt): needs no kernels.
mf_add_check_test(test_npt_fixtures
  SOURCES equivalence/test_npt_fixtures.c
  LABELS equivalence
  TIMEOUT 60)

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_npt_equiv
    SOURCES equivalence/test_npt_equiv.c
    LABELS equivalence
    BACKENDS host cuda
    TIMEOUT 300)
  mf_add_check_test(test_npt_memory
    SOURCES memory/test_npt_memory.c
    LABELS memory
    BACKENDS host cuda
    TIMEOUT 120)
  mf_add_check_test(test_npt_badinput
    SOURCES unit/test_npt_badinput.c
    LABELS unit
    BACKENDS host cuda
    TIMEOUT 60)

  # The backward again with the threads of each block run in reverse order
  # (cudahost): the column-sum kernel of grad_bias reduces through shared
  # memory, so a missing __syncthreads shows up as a mismatch.
  add_test(NAME test_npt_equiv_reverse.host COMMAND test_npt_equiv)
  set_tests_properties(test_npt_equiv_reverse.host PROPERTIES
    LABELS "equivalence;host"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=backward;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
endif()
