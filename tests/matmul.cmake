# Matmul fix (seed 002, issue 3 part 4): equivalence of every variant with the
# reference, memory ceilings, bad input, and the reference against PyTorch
# fixtures. Sources are relative to tests/.

# The reference against torch.matmul fixtures: needs no kernels.
mf_add_check_test(test_matmul_fixtures
  SOURCES equivalence/test_matmul_fixtures.c
  LABELS equivalence
  TIMEOUT 60)

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_matmul_equiv
    SOURCES equivalence/test_matmul_equiv.c
    LABELS equivalence
    BACKENDS host cuda
    TIMEOUT 300)
  # The grid-cap case (more than 65535 row tiles; Check tag "slow") takes seconds
  # in host mode: it runs from its own registration, labelled slow.
  foreach(backend host cuda)
    set_property(TEST test_matmul_equiv.${backend} APPEND PROPERTY ENVIRONMENT CK_EXCLUDE_TAGS=slow)
  endforeach()
  foreach(backend host cuda)
    add_test(NAME test_matmul_equiv_grid_cap.${backend} COMMAND test_matmul_equiv)
    set_tests_properties(test_matmul_equiv_grid_cap.${backend} PROPERTIES
      LABELS "equivalence;slow;${backend}"
      TIMEOUT 300
      SKIP_RETURN_CODE 77
      ENVIRONMENT "MF_TEST_BACKEND=${backend};CK_RUN_CASE=grid_cap;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
  endforeach()
  mf_add_check_test(test_matmul_memory
    SOURCES memory/test_matmul_memory.c
    LABELS memory
    BACKENDS host cuda
    TIMEOUT 120)
  mf_add_check_test(test_matmul_badinput
    SOURCES unit/test_matmul_badinput.c
    LABELS unit
    BACKENDS host cuda
    TIMEOUT 60)

  # The tiled kernel again with the threads of each block run in reverse order
  # (cudahost): a missing or misplaced __syncthreads shows up as a mismatch.
  add_test(NAME test_matmul_equiv_tiled_reverse.host COMMAND test_matmul_equiv)
  set_tests_properties(test_matmul_equiv_tiled_reverse.host PROPERTIES
    LABELS "equivalence;host"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=tiled;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
endif()
