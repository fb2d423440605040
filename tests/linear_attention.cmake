# Linear attention fix (seed 003): bidirectional, and causal from the
# materialized cumsum to chunks. Sources are relative to tests/.

# The equivalence suite's TCases are the op's variants (mf_test_add_op_cases):
# causal_chunked (with the two-call property) in reverse thread order here...
mf_add_op_tests(linear_attention REVERSE causal_chunked)

# ...and bidirectional in a second reverse-order registration, the first's
# properties with the other TCase (CK_RUN_CASE names one).
if(TEST test_linear_attention_equiv_reverse.host)
  get_test_property(test_linear_attention_equiv_reverse.host ENVIRONMENT _la_env)
  get_test_property(test_linear_attention_equiv_reverse.host LABELS _la_labels)
  get_test_property(test_linear_attention_equiv_reverse.host TIMEOUT _la_timeout)
  string(REPLACE "CK_RUN_CASE=causal_chunked" "CK_RUN_CASE=bidirectional" _la_env "${_la_env}")
  add_test(NAME test_linear_attention_equiv_bidir_reverse.host COMMAND test_linear_attention_equiv)
  set_tests_properties(test_linear_attention_equiv_bidir_reverse.host PROPERTIES
    LABELS "${_la_labels}" TIMEOUT ${_la_timeout} SKIP_RETURN_CODE 77 ENVIRONMENT "${_la_env}")
endif()

if(MF_HAVE_HOST_KERNELS)
  # The descriptor's many-chunk rows (N up to 512, D up to 128; the last of
  # src/ops/linear_attention.c's table, kept out of the sweeps by its
  # case_applies), through the testbed (mf_test_op_case_unlisted): label slow.
  mf_add_check_test(test_linear_attention_equiv_large
    SOURCES equivalence/test_linear_attention_equiv.c
    LABELS equivalence slow
    BACKENDS host cuda
    TIMEOUT 600)
  target_compile_definitions(test_linear_attention_equiv_large PRIVATE MF_LARGE_SHAPES=1)
endif()
