# Linear attention fix (seed 003, issue 7): bidirectional, and causal from the
# materialized cumsum to chunks. Sources are relative to tests/.

mf_add_op_tests(linear_attention REVERSE kernels)

if(MF_HAVE_HOST_KERNELS)
  # The same suite on many-chunk shapes (N up to 512, D up to 128): label slow.
  mf_add_check_test(test_linear_attention_equiv_large
    SOURCES equivalence/test_linear_attention_equiv.c
    LABELS equivalence slow
    BACKENDS host cuda
    TIMEOUT 600)
  target_compile_definitions(test_linear_attention_equiv_large PRIVATE MF_LARGE_SHAPES=1)
endif()
