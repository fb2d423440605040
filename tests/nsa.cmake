# Native sparse attention (seed 001, issue 15): dense masked three-branch
# reference vs a fused block-sparse kernel. Sources are relative to tests/.
mf_add_op_tests(nsa REVERSE kernels)
