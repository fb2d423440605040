# NPT per-token weight delta (seed 004): the reference against PyTorch
# fixtures, equivalence of the factored kernel with the 4D reference (forward
# and every gradient), memory ceilings, bad input. Sources are relative to tests/.

mf_add_op_tests(npt REVERSE factored)
