# Cross-entropy fix (seed 000, bug 1; issue 4): the full-logits reference against
# PyTorch fixtures, the chunked fused linear cross-entropy against the reference
# (forward, fused forward+backward, backward from the saved lse), its memory
# formulas and measured scratch, and bad input. Sources are relative to tests/.

mf_add_op_tests(cross_entropy REVERSE chunked)
