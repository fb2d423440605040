# RoPE fix (seed 000, bug #2): the reference against PyTorch fixtures,
# equivalence of the fused and cache variants with the reference (the op's
# built-in cases through the testbed: layouts, GQA, partial rotary, positions,
# dtypes, forward/backward, in place, cache growth, long context), memory
# formulas and ceilings, bad input. Sources relative to tests/.

mf_add_op_tests(rope REVERSE reverse)

if(MF_HAVE_HOST_KERNELS)
  # The equivalence suite's TCase "reverse" (Check tag "reverse": both variants'
  # cases without the long-context ones) runs from the reverse-order
  # registration only.
  foreach(backend host cuda)
    set_property(TEST test_rope_equiv.${backend} APPEND PROPERTY ENVIRONMENT CK_EXCLUDE_TAGS=reverse)
  endforeach()
endif()
