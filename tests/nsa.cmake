# Native sparse attention (seed 001, issue 15): dense masked three-branch
# reference vs a fused block-sparse kernel. Sources are relative to tests/.
mf_add_op_tests(nsa REVERSE kernels)

# Under TSan the forward-order registration runs the kernels test case only (like the reverse one):
# its "registry" case repeats what test_registry and the verify tests already run under TSan, and the
# two together take about half an hour of a core there.
if(MF_SANITIZER STREQUAL "thread" AND TEST test_nsa_equiv.host)
  set_property(TEST test_nsa_equiv.host APPEND PROPERTY ENVIRONMENT "CK_RUN_CASE=kernels")
endif()
