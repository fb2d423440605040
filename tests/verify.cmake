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

  # the other ops' examples through the binary: one correct and one wrong each
  function(mf_verify_cli_test op lib sym regex)
    add_test(NAME test_verify_cli_${lib}.host
      COMMAND $<TARGET_FILE:memfix-cli> verify --op ${op} --symbol ${sym} --backend host
              --lib ${_mf_cand_dir}/lib${lib}.so)
    set_tests_properties(test_verify_cli_${lib}.host PROPERTIES
      LABELS "unit;host" TIMEOUT 120 PASS_REGULAR_EXPRESSION "${regex}")
  endfunction()
  mf_verify_cli_test(cross_entropy.backward ce_backward_correct ce_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(cross_entropy.backward ce_backward_no_grad_loss ce_backward_candidate
                     "REJECTED [^\n]* by equivalence")
  # issue 16 item 4: the memory defenses (src/testbed/mem_defense.c), one cheating candidate each
  mf_verify_cli_test(matmul matmul_scratch_overrun matmul_candidate "REJECTED [^\n]* by scratch-guard")
  mf_verify_cli_test(matmul matmul_static_scratch matmul_candidate "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(matmul matmul_pinned_scratch matmul_candidate "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(matmul matmul_negate_restore matmul_candidate "REJECTED [^\n]* by input-write")
  mf_verify_cli_test(cross_entropy ce_forward_calls_reference ce_forward_candidate
                     "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(cross_entropy ce_forward_correct ce_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(rope rope_correct rope_candidate "candidate ACCEPTED")
  mf_verify_cli_test(rope rope_ignores_direction rope_candidate "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(attention.forward attention_forward_correct attention_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(attention.forward attention_forward_no_scale attention_forward_candidate
                     "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(attention.backward attention_backward_correct attention_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(attention.backward attention_backward_dk_sign attention_backward_candidate
                     "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(npt.forward npt_forward_correct npt_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(npt.forward npt_forward_no_modulation npt_forward_candidate "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(npt.backward npt_backward_correct npt_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(npt.backward npt_backward_no_modulation npt_backward_candidate
                     "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(linear_attention.forward linear_attention_forward_correct linear_attention_forward_candidate
                     "candidate ACCEPTED")
  mf_verify_cli_test(linear_attention.forward linear_attention_forward_no_state linear_attention_forward_candidate
                     "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(linear_attention.backward linear_attention_backward_correct linear_attention_backward_candidate
                     "candidate ACCEPTED")
  mf_verify_cli_test(linear_attention.backward linear_attention_backward_no_final_grad
                     linear_attention_backward_candidate "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(nsa.forward nsa_forward_correct nsa_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(nsa.forward nsa_forward_ungated_cmp nsa_forward_candidate "REJECTED [^\n]* by equivalence")
  mf_verify_cli_test(nsa.backward nsa_backward_correct nsa_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(nsa.backward nsa_backward_no_pool_grad nsa_backward_candidate
                     "REJECTED [^\n]* by equivalence")

  if(MF_HAVE_CUDA)
    # On a GPU runner: the nvcc-built correct candidates on the CUDA backend
    # (memfix exits 3, skipped, without a device).
    add_test(NAME test_verify_cli_correct.cuda
      COMMAND $<TARGET_FILE:memfix-cli> verify --op matmul --symbol matmul_candidate --backend cuda
              --lib ${CMAKE_BINARY_DIR}/candidates/cuda/libmatmul_correct.so)
    set_tests_properties(test_verify_cli_correct.cuda PROPERTIES
      LABELS "unit;cuda" TIMEOUT 120 SKIP_RETURN_CODE 3)
    foreach(_t IN ITEMS "cross_entropy:ce_forward:ce_forward" "cross_entropy.backward:ce_backward:ce_backward"
                        "rope:rope:rope" "attention.forward:attention_forward:attention_forward"
                        "attention.backward:attention_backward:attention_backward"
                        "npt.forward:npt_forward:npt_forward" "npt.backward:npt_backward:npt_backward"
                        "linear_attention.forward:linear_attention_forward:linear_attention_forward"
                        "linear_attention.backward:linear_attention_backward:linear_attention_backward"
                        "nsa.forward:nsa_forward:nsa_forward" "nsa.backward:nsa_backward:nsa_backward")
      string(REPLACE ":" ";" _f "${_t}")
      list(GET _f 0 _op)
      list(GET _f 1 _lib)
      list(GET _f 2 _sym)
      add_test(NAME test_verify_cli_${_lib}_correct.cuda
        COMMAND $<TARGET_FILE:memfix-cli> verify --op ${_op} --symbol ${_sym}_candidate --backend cuda
                --lib ${CMAKE_BINARY_DIR}/candidates/cuda/lib${_lib}_correct.so)
      set_tests_properties(test_verify_cli_${_lib}_correct.cuda PROPERTIES
        LABELS "unit;cuda" TIMEOUT 120 SKIP_RETURN_CODE 3 PASS_REGULAR_EXPRESSION "candidate ACCEPTED")
    endforeach()
  endif()
endif()
