# Matmul fix (seed 002): equivalence of every variant with the
# reference, memory ceilings, bad input, and the reference against PyTorch
# fixtures. Sources are relative to tests/.

mf_add_op_tests(matmul REVERSE tiled)

if(MF_HAVE_HOST_KERNELS)
  # The grid-cap case (more than 65535 row tiles; Check tag "slow") takes seconds
  # in host mode: it runs from its own registration, labelled slow.
  foreach(backend host cuda)
    set_property(TEST test_matmul_equiv.${backend} APPEND PROPERTY ENVIRONMENT CK_EXCLUDE_TAGS=slow)
  endforeach()
  foreach(backend host cuda)
    add_test(NAME test_matmul_equiv_grid_cap.${backend} COMMAND test_matmul_equiv)
    set_tests_properties(test_matmul_equiv_grid_cap.${backend} PROPERTIES
      LABELS "equivalence;slow;${backend}"
      TIMEOUT 300
      SKIP_RETURN_CODE 77
      ENVIRONMENT "MF_TEST_BACKEND=${backend};CK_RUN_CASE=grid_cap;CK_DEFAULT_TIMEOUT=300;MF_TEST_DUMP_DIR=${CMAKE_BINARY_DIR}/test-dumps")
  endforeach()
endif()
