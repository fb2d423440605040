# RoPE fix (seed 000, bug #2; issue 5): the reference against PyTorch fixtures,
# equivalence of the fused and cache variants with the reference (layouts, GQA,
# partial rotary, positions, dtypes, forward/backward, cache growth, long
# context), memory formulas and ceilings, bad input. Sources relative to tests/.

mf_add_op_tests(rope REVERSE variants)
