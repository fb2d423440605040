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
    TIMEOUT 300)
  target_link_libraries(test_verify PRIVATE mf_cli ${CMAKE_DL_LIBS})
  target_compile_definitions(test_verify PRIVATE MF_CANDIDATE_DIR="${_mf_cand_dir}"
                                                MF_VERIFY_WORKER_PATH="$<TARGET_FILE:memfix-verify-worker>")
  add_dependencies(test_verify memfix-verify-worker)
  # the candidates resolve cudahost_* and mf_* from the executable that loads them
  set_target_properties(test_verify PROPERTIES ENABLE_EXPORTS ON)
  add_dependencies(test_verify mf_verify_candidates)

  # every case runs in several thread orders (issue 16): sanitizer builds get the usual timeout factor
  math(EXPR _mf_verify_timeout "120 * ${MF_TEST_TIMEOUT_MULTIPLIER}")
  math(EXPR _mf_verify_timeout_long "300 * ${MF_TEST_TIMEOUT_MULTIPLIER}")
  set(_mf_verify_cmd $<TARGET_FILE:memfix-cli> verify --op matmul --symbol matmul_candidate --backend host)
  add_test(NAME test_verify_cli_correct.host COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_correct.so)
  set_tests_properties(test_verify_cli_correct.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "candidate ACCEPTED")
  add_test(NAME test_verify_cli_mutates_input.host
    COMMAND ${_mf_verify_cmd} --json --lib ${_mf_cand_dir}/libmatmul_mutates_input.so)
  set_tests_properties(test_verify_cli_mutates_input.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "\"defense\":[ \t]*\"input-mutation\"")
  add_test(NAME test_verify_cli_hidden_alloc.host
    COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_hidden_alloc.so)
  set_tests_properties(test_verify_cli_hidden_alloc.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "REJECTED [^\n]* by hidden-allocation")

  # the other ops' examples through the binary: one correct and one wrong each
  function(mf_verify_cli_test op lib sym regex)
    add_test(NAME test_verify_cli_${lib}.host
      COMMAND $<TARGET_FILE:memfix-cli> verify --op ${op} --symbol ${sym} --backend host --orders 0
              --lib ${_mf_cand_dir}/lib${lib}.so)
    set_tests_properties(test_verify_cli_${lib}.host PROPERTIES
      LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "${regex}")
  endfunction()
  mf_verify_cli_test(cross_entropy.backward ce_backward_correct ce_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(cross_entropy.backward ce_backward_no_grad_loss ce_backward_candidate
                     "REJECTED [^\n]* by equivalence")
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

  # Issue 16: the candidate runs in a worker process (bin/memfix-verify-worker)
  # with a time limit and in several thread orders; exit statuses are checked.
  function(mf_verify_expect name rc must)
    cmake_parse_arguments(A "" "MUST_NOT" "ARGS" ${ARGN})
    string(REPLACE ";" "|" _a "verify;--backend;host;${A_ARGS}")
    add_test(NAME test_verify_cli_${name}.host
      COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:memfix-cli> "-DARGS=${_a}" -DRC=${rc} "-DMUST=${must}"
              "-DMUST_NOT=${A_MUST_NOT}" -P ${MF_ROOT}/tests/support/verify_expect.cmake)
    set_tests_properties(test_verify_cli_${name}.host PROPERTIES LABELS "unit;host" TIMEOUT ${_mf_verify_timeout_long})
  endfunction()
  set(_mm --op matmul --symbol matmul_candidate --lib)
  mf_verify_expect(accepted_status 0 "candidate ACCEPTED" ARGS ${_mm} ${_mf_cand_dir}/libmatmul_correct.so)
  # exit(0) on the 3rd call: rejected by exit, JSON printed, exit status 1
  mf_verify_expect(exit_third 1 "\"defense\":[ \t]*\"exit\"|exited with status 0"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_exit_third.so --json)
  # a destructor calling _exit(0) cannot change the exit status of a rejection
  mf_verify_expect(destructor_exit 1 "by equivalence|candidate REJECTED"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_destructor_exit.so)
  # a constructor raising the tolerance rows reaches only the worker's table
  mf_verify_expect(tolerance_ctor 1 "by equivalence: C: " MUST_NOT "by (exit|crash|protocol)"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_tolerance_ctor.so)
  # endless loops in host code and in a kernel: killed after --timeout
  mf_verify_expect(host_loop 1 "\\[f32 M=17 N=33 K=19 ta=0 tb=0\\] by timeout"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_host_loop.so --timeout 5 --orders 0)
  mf_verify_expect(kernel_loop 1 "K=19 ta=1 tb=0\\] by timeout"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_kernel_loop.so --timeout 5 --orders 0)
  # a shared-memory race right only in forward order
  mf_verify_expect(smem_race 1 "by schedule: passed in forward order, failed in"
    MUST_NOT "by (equivalence|nan-prefill|exit|crash)"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_smem_race.so --orders 1)
  # --json is printed on errors after parsing too
  mf_verify_expect(json_usage 2 "\"exit_status\":[ \t]*2|no symbol 'nosuch'"
    ARGS --op matmul --symbol nosuch --lib ${_mf_cand_dir}/libmatmul_correct.so --json)
  # --sanitize: accepted by a worker built with that sanitizer (the tsan/asan presets), else said so (exit 3)
  foreach(_san IN ITEMS thread address)
    if(MF_SANITIZER STREQUAL _san)
      mf_verify_expect(sanitize_${_san} 0 "candidate ACCEPTED"
        ARGS ${_mm} ${_mf_cand_dir}/libmatmul_correct.so --sanitize ${_san} --orders 0)
    else()
      mf_verify_expect(sanitize_${_san} 3 "not built with the ${_san} sanitizer"
        ARGS ${_mm} ${_mf_cand_dir}/libmatmul_correct.so --sanitize ${_san})
    endif()
  endforeach()
  mf_verify_expect(bad_timeout 2 "--timeout '0'" ARGS ${_mm} ${_mf_cand_dir}/libmatmul_correct.so --timeout 0)
  if(MF_HAVE_CUDA)
    # a library built with nvcc against libcudart, verified on the host backend: said so, exit 2
    mf_verify_expect(cuda_lib_on_host 2 "CUDA runtime"
      ARGS ${_mm} ${CMAKE_BINARY_DIR}/candidates/cuda/libmatmul_correct.so)
  endif()

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
                        "linear_attention.backward:linear_attention_backward:linear_attention_backward")
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
