# Native sparse attention (seed 001): dense masked three-branch
# reference vs a fused block-sparse kernel. Sources are relative to tests/.
mf_add_op_tests(nsa REVERSE fused)

# Under TSan the forward-order registration runs the "fused" test case only, which there is the op's
# report cases (MF_TEST_SANITIZER=thread: every dtype, small shapes), as the reverse one does: the
# "verify" case repeats what the verify tests run; it stays in the default and ASan legs.
if(MF_SANITIZER STREQUAL "thread" AND TEST test_nsa_equiv.host)
  set_property(TEST test_nsa_equiv.host APPEND PROPERTY ENVIRONMENT "CK_RUN_CASE=fused")
endif()

# The bf16 forward's tensor-core kernels on wgmma (test cases wgmma and wgmma_recheck:
# MF_NSA_MMA_PATH=wgmma, sm_90a, emulated in host mode): registrations of their own, one per test
# case and thread order, so that ctest -j runs them beside the others (under TSan the two took 268 s
# as one test, the longest of that leg); the forward-order registration above leaves them out.
if(TEST test_nsa_equiv.host AND TEST test_nsa_equiv_reverse.host)
  get_test_property(test_nsa_equiv.host ENVIRONMENT _nsa_env)
  get_test_property(test_nsa_equiv_reverse.host ENVIRONMENT _nsa_rev_env)
  get_test_property(test_nsa_equiv.host TIMEOUT _nsa_timeout)
  list(FILTER _nsa_env EXCLUDE REGEX "^CK_RUN_CASE=")
  list(FILTER _nsa_rev_env EXCLUDE REGEX "^CK_RUN_CASE=")
  if(NOT MF_SANITIZER STREQUAL "thread")
    set_property(TEST test_nsa_equiv.host APPEND PROPERTY ENVIRONMENT "CK_EXCLUDE_TAGS=needs_wgmma needs_wgmma_recheck")
  endif()
  foreach(_case IN ITEMS wgmma wgmma_recheck)
    add_test(NAME test_nsa_equiv_${_case}.host COMMAND test_nsa_equiv)
    add_test(NAME test_nsa_equiv_${_case}_reverse.host COMMAND test_nsa_equiv)
    set_tests_properties(test_nsa_equiv_${_case}.host PROPERTIES LABELS "equivalence;host" TIMEOUT ${_nsa_timeout}
                         SKIP_RETURN_CODE 77 ENVIRONMENT "${_nsa_env};CK_RUN_CASE=${_case}")
    set_tests_properties(test_nsa_equiv_${_case}_reverse.host PROPERTIES LABELS "equivalence;host;reverse"
                         TIMEOUT ${_nsa_timeout} SKIP_RETURN_CODE 77 ENVIRONMENT "${_nsa_rev_env};CK_RUN_CASE=${_case}")
  endforeach()
endif()

# The selection certificate's near-tie cases (test case "certificate") with host mode's tensor cores accumulating
# as the hardware does on the H100 profile (CUDAHOST_MMA_ARITH=truncate, blocks of 16 products; the A100 profile's
# blocks of 8 run with the whole suite in test_nsa_equiv_a100_tc.host): the certificate's error bound
# (kMmaK16StepErr) must hold for that arithmetic, not only for host mode's default fp32 sums. Default build only.
if(TEST test_nsa_equiv.host AND NOT MF_SANITIZER)
  get_test_property(test_nsa_equiv.host ENVIRONMENT _nsa_tc_env)
  get_test_property(test_nsa_equiv.host TIMEOUT _nsa_tc_timeout)
  list(FILTER _nsa_tc_env EXCLUDE REGEX "^CK_(RUN_CASE|EXCLUDE_TAGS)=")
  add_test(NAME test_nsa_equiv_certificate_tc_h100.host COMMAND test_nsa_equiv)
  set_tests_properties(test_nsa_equiv_certificate_tc_h100.host PROPERTIES LABELS "equivalence;host"
                       TIMEOUT ${_nsa_tc_timeout} SKIP_RETURN_CODE 77
                       ENVIRONMENT "${_nsa_tc_env};CK_RUN_CASE=certificate;CUDAHOST_MMA_ARITH=truncate;CUDAHOST_DEVICE=h100")
endif()
