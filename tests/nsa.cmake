# Native sparse attention (seed 001, issue 15): dense masked three-branch
# reference vs a fused block-sparse kernel. Sources are relative to tests/.
mf_add_check_test(test_nsa_fixtures SOURCES equivalence/test_nsa_fixtures.c LABELS equivalence TIMEOUT 60)
