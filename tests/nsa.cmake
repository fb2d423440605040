# Native sparse attention (seed 001, issue 15): dense masked three-branch
# reference vs a fused block-sparse kernel. Sources are relative to tests/.
mf_add_op_tests(nsa REVERSE fused)

# Under TSan the forward-order registration runs the "fused" test case only, which there is the op's
# report cases (MF_TEST_SANITIZER=thread: every dtype, small shapes), as the reverse one does: the
# "verify" case repeats what the verify tests run; it stays in the default and ASan legs.
if(MF_SANITIZER STREQUAL "thread" AND TEST test_nsa_equiv.host)
  set_property(TEST test_nsa_equiv.host APPEND PROPERTY ENVIRONMENT "CK_RUN_CASE=fused")
endif()
