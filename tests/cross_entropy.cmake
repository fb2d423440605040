# Cross-entropy fix (seed 000, bug 1): the full-logits reference against
# PyTorch fixtures, the chunked fused linear cross-entropy against the reference
# (forward, fused forward+backward, backward from the saved lse), its memory
# formulas and measured scratch, and bad input. Sources are relative to tests/.

mf_add_op_tests(cross_entropy REVERSE chunked EQUIV_TIMEOUT 300)

# The suite runs the op's descriptor cases (mf_test_add_op_cases: Check test
# cases chunked and fused) and the fused V = 151,936 cases in a test case of
# their own, fused_vocab (src/ops/cross_entropy_cases.c's case_applies keeps them out
# of the fused sweep). test_cross_entropy_equiv.host runs the chunked test case
# only; the fused variant's cases get registrations of their own so that ctest
# -j runs them side by side: test_cross_entropy_equiv_fused.host
# (every option, odd shapes, blocks and strips) and
# test_cross_entropy_equiv_fused_vocab.host (V = 151,936),
# test_cross_entropy_equiv_fused_wgmma.host (the bf16 kernels on wgmma, sm_90a,
# emulated), in forward order, and the reverse-order registrations below. Both
# V = 151,936 registrations are labelled slow where the sanitizer legs would run
# them (the reverse one everywhere, the forward one in the sanitizer builds): the
# default leg runs them.
if(TEST test_cross_entropy_equiv.host)
  get_test_property(test_cross_entropy_equiv.host ENVIRONMENT _ce_fwd_env)
  get_test_property(test_cross_entropy_equiv.host TIMEOUT _ce_fwd_timeout)
  set_property(TEST test_cross_entropy_equiv.host APPEND PROPERTY ENVIRONMENT "CK_RUN_CASE=chunked")
  if(TEST test_cross_entropy_equiv_a100_tc.host) # the fused cases' A100 run is test_cross_entropy_equiv_fused_a100
    set_property(TEST test_cross_entropy_equiv_a100_tc.host APPEND PROPERTY ENVIRONMENT "CK_RUN_CASE=chunked")
  endif()
  foreach(_case fused fused_vocab fused_wgmma)
    add_test(NAME test_cross_entropy_equiv_${_case}.host COMMAND test_cross_entropy_equiv)
    set_tests_properties(test_cross_entropy_equiv_${_case}.host PROPERTIES
      LABELS "equivalence;host" TIMEOUT ${_ce_fwd_timeout} SKIP_RETURN_CODE 77
      ENVIRONMENT "${_ce_fwd_env};CK_RUN_CASE=${_case}")
  endforeach()
  # Under TSan the V = 151,936 case takes 15-30 minutes of one core (1187 CTAs of 256 fibers per pass),
  # under ASan with coverage (CI's ASan leg) about 85 s, a seventh of that leg: labelled slow in both
  # so the sanitizer legs (-LE slow) stay short; run it with `ctest --preset tsan -R fused_vocab` (or
  # asan). The default leg runs it in every CI, in both thread orders; the sanitizer legs run the
  # fused kernels on every other case (odd N, D and V, every option, the row blocks and strips).
  if(MF_SANITIZER)
    set_property(TEST test_cross_entropy_equiv_fused_vocab.host APPEND PROPERTY LABELS slow)
  endif()
endif()

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
  # The bf16 kernels on wgmma (test case fused_wgmma: MF_CE_MMA_PATH=wgmma) in reverse order too.
  string(REPLACE "CK_RUN_CASE=fused" "CK_RUN_CASE=fused_wgmma" _ce_wg_env "${_ce_env}")
  add_test(NAME test_cross_entropy_equiv_fused_wgmma_reverse.host COMMAND test_cross_entropy_equiv)
  set_tests_properties(test_cross_entropy_equiv_fused_wgmma_reverse.host PROPERTIES
    LABELS "equivalence;host;reverse" TIMEOUT ${_ce_timeout} SKIP_RETURN_CODE 77
    ENVIRONMENT "${_ce_wg_env}")
  string(REPLACE "CK_RUN_CASE=fused" "CK_RUN_CASE=fused_vocab" _ce_env "${_ce_env}")
  add_test(NAME test_cross_entropy_equiv_fused_vocab_reverse.host COMMAND test_cross_entropy_equiv)
  set_tests_properties(test_cross_entropy_equiv_fused_vocab_reverse.host PROPERTIES
    LABELS "equivalence;host;reverse;slow" TIMEOUT ${_ce_timeout} SKIP_RETURN_CODE 77
    ENVIRONMENT "${_ce_env}")
endif()

# The A100 profile (CUDAHOST_DEVICE=a100: compute capability 8.0, 166,912 B of shared
# memory per block) with truncating tensor cores (CUDAHOST_MMA_ARITH=truncate): the bf16
# fused backward's mma.sync kernel takes its 3-tile strip there (4 tiles need 175,616 B),
# the forced-wgmma case skips. The fused test case (every option, odd shapes, partial
# strips) runs under it (the chunked one and the memory suite in
# test_cross_entropy_{equiv,memory}_a100_tc.host, mf_add_op_tests).
if(TEST test_cross_entropy_equiv_fused.host)
  foreach(_t equiv_fused)
    string(REPLACE "_fused" "" _ce_a100_exe "test_cross_entropy_${_t}")
    get_test_property(test_cross_entropy_${_t}.host ENVIRONMENT _ce_a100_env)
    get_test_property(test_cross_entropy_${_t}.host TIMEOUT _ce_a100_timeout)
    get_test_property(test_cross_entropy_${_t}.host LABELS _ce_a100_labels)
    add_test(NAME test_cross_entropy_${_t}_a100.host COMMAND ${_ce_a100_exe})
    set_tests_properties(test_cross_entropy_${_t}_a100.host PROPERTIES
      LABELS "${_ce_a100_labels};a100" TIMEOUT ${_ce_a100_timeout} SKIP_RETURN_CODE 77
      ENVIRONMENT "${_ce_a100_env};CUDAHOST_DEVICE=a100;CUDAHOST_MMA_ARITH=truncate")
  endforeach()
endif()
