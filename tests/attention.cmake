# Attention fix (seed 003): standard (materialized scores) vs tiled
# online-softmax attention. Sources are relative to tests/.

mf_add_op_tests(attention REVERSE tiled)

if(MF_HAVE_HOST_KERNELS)
  # The descriptor's multi-tile cases (N up to 256, D up to 128; the last of
  # src/ops/attention.c's table, kept out of the sweep by its case_applies),
  # through the testbed (mf_test_op_case_unlisted): label slow.
  mf_add_check_test(test_attention_equiv_large
    SOURCES equivalence/test_attention_equiv.c
    LABELS equivalence slow
    BACKENDS host cuda
    TIMEOUT 600)
  target_compile_definitions(test_attention_equiv_large PRIVATE MF_LARGE_SHAPES=1)
endif()
