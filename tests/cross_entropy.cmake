# Cross-entropy fix (seed 000, bug 1; issue 4): the full-logits reference against
# PyTorch fixtures, the chunked fused linear cross-entropy against the reference
# (forward, fused forward+backward, backward from the saved lse), its memory
# formulas and measured scratch, and bad input. Sources are relative to tests/.

mf_add_op_tests(cross_entropy REVERSE chunked EQUIV_TIMEOUT 300)

# The fused variant's test case (mma.sync fragments, the shared dL/dz tile, the
# per-row-block grad_hidden read-modify-write) with reversed thread order too:
# the chunked registration's environment and timeout with CK_RUN_CASE=fused.
if(TEST test_cross_entropy_equiv_reverse.host)
  get_test_property(test_cross_entropy_equiv_reverse.host ENVIRONMENT _ce_env)
  get_test_property(test_cross_entropy_equiv_reverse.host TIMEOUT _ce_timeout)
  string(REPLACE "CK_RUN_CASE=chunked" "CK_RUN_CASE=fused" _ce_env "${_ce_env}")
  add_test(NAME test_cross_entropy_equiv_fused_reverse.host COMMAND test_cross_entropy_equiv)
  set_tests_properties(test_cross_entropy_equiv_fused_reverse.host PROPERTIES
    LABELS "equivalence;host;reverse" TIMEOUT ${_ce_timeout} SKIP_RETURN_CODE 77
    ENVIRONMENT "${_ce_env}")
endif()
