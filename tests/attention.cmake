# Attention fix (seed 003, issue 7): standard (materialized scores) vs tiled
# online-softmax attention. Sources are relative to tests/.

# The reference against the document's standard_attention run by PyTorch with
# autograd: needs no kernels.
mf_add_check_test(test_attention_fixtures
  SOURCES equivalence/test_attention_fixtures.c
  LABELS equivalence
  TIMEOUT 60)

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_attention_equiv
    SOURCES equivalence/test_attention_equiv.c
    LABELS equivalence
    BACKENDS host cuda
    TIMEOUT 300)

  # The tiled kernels again with the threads of each block run in reverse order
  # (cudahost): a missing or misplaced __syncthreads shows up as a mismatch.
  add_test(NAME test_attention_equiv_reverse.host COMMAND test_attention_equiv)
  set_tests_properties(test_attention_equiv_reverse.host PROPERTIES
    LABELS "equivalence;host"
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "MF_TEST_BACKEND=host;CUDAHOST_THREAD_ORDER=reverse;CK_RUN_CASE=tiled;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
endif()

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_attention_memory
    SOURCES memory/test_attention_memory.c
    LABELS memory
    BACKENDS host cuda
    TIMEOUT 120)
  mf_add_check_test(test_attention_badinput
    SOURCES unit/test_attention_badinput.c
    LABELS unit
    BACKENDS host cuda
    TIMEOUT 60)
endif()

if(MF_HAVE_HOST_KERNELS)
  # The same suite on multi-tile shapes (N up to 256, D up to 128): label slow.
  mf_add_check_test(test_attention_equiv_large
    SOURCES equivalence/test_attention_equiv.c
    LABELS equivalence slow
    BACKENDS host cuda
    TIMEOUT 600)
  target_compile_definitions(test_attention_equiv_large PRIVATE MF_LARGE_SHAPES=1)
endif()
