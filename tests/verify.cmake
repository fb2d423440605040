# memfix verify (issue 8 item 2): the example candidates of examples/candidates/
# (built there as host-mode shared libraries) through mf_verify and the command
# in-process (tests/unit/test_verify.c), and end to end through the built
# memfix binary, which must export its symbols for the candidates to load.
if(MF_BUILD_TESTS AND MF_HAVE_HOST_KERNELS AND COMMAND cudahost_add_library)
  set(_mf_cand_dir ${CMAKE_BINARY_DIR}/candidates/host)
  mf_add_check_test(test_verify
    SOURCES unit/test_verify.c
    LABELS unit
    BACKENDS host
    TIMEOUT 120)
  target_link_libraries(test_verify PRIVATE mf_cli ${CMAKE_DL_LIBS})
  target_compile_definitions(test_verify PRIVATE MF_CANDIDATE_DIR="${_mf_cand_dir}")
  # the candidates resolve cudahost_* and mf_* from the executable that loads them
  set_target_properties(test_verify PROPERTIES ENABLE_EXPORTS ON)
  add_dependencies(test_verify mf_verify_candidates)

  set(_mf_verify_cmd $<TARGET_FILE:memfix-cli> verify --op matmul --symbol matmul_candidate --backend host)
  add_test(NAME test_verify_cli_correct.host COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_correct.so)
  set_tests_properties(test_verify_cli_correct.host PROPERTIES
    LABELS "unit;host" TIMEOUT 120 PASS_REGULAR_EXPRESSION "candidate ACCEPTED")
  add_test(NAME test_verify_cli_mutates_input.host
    COMMAND ${_mf_verify_cmd} --json --lib ${_mf_cand_dir}/libmatmul_mutates_input.so)
  set_tests_properties(test_verify_cli_mutates_input.host PROPERTIES
    LABELS "unit;host" TIMEOUT 120 PASS_REGULAR_EXPRESSION "\"defense\":[ \t]*\"input-mutation\"")
  add_test(NAME test_verify_cli_hidden_alloc.host
    COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_hidden_alloc.so)
  set_tests_properties(test_verify_cli_hidden_alloc.host PROPERTIES
    LABELS "unit;host" TIMEOUT 120 PASS_REGULAR_EXPRESSION "REJECTED [^\n]* by hidden-allocation")

  if(MF_HAVE_CUDA)
    # On a GPU runner: the nvcc-built correct candidate on the CUDA backend
    # (memfix exits 3, skipped, without a device).
    add_test(NAME test_verify_cli_correct.cuda
      COMMAND $<TARGET_FILE:memfix-cli> verify --op matmul --symbol matmul_candidate --backend cuda
              --lib ${CMAKE_BINARY_DIR}/candidates/cuda/libmatmul_correct.so)
    set_tests_properties(test_verify_cli_correct.cuda PROPERTIES
      LABELS "unit;cuda" TIMEOUT 120 SKIP_RETURN_CODE 3)
  endif()
endif()
