# RoPE fix (seed 000, bug #2; issue 5): the reference against PyTorch fixtures,
# equivalence of the fused and cache variants with the reference (layouts, GQA,
# partial rotary, positions, dtypes, forward/backward, cache growth, long
# context), memory formulas and ceilings, bad input. Sources relative to tests/.

# The reference against the HF rotary code run by torch: needs no kernels.
mf_add_check_test(test_rope_fixtures
  SOURCES equivalence/test_rope_fixtures.c
  LABELS equivalence
  TIMEOUT 60)

if(MF_HAVE_HOST_KERNELS)
  mf_add_check_test(test_rope_equiv
    SOURCES equivalence/test_rope_equiv.c
    LABELS equivalence
    BACKENDS host cuda
    TIMEOUT 300)
  mf_add_check_test(test_rope_memory
    SOURCES memory/test_rope_memory.c
    LABELS memory
    BACKENDS host cuda
    TIMEOUT 120)
  mf_add_check_test(test_rope_badinput
    SOURCES unit/test_rope_badinput.c
    LABELS unit
    BACKENDS host cuda
    TIMEOUT 60)
endif()
