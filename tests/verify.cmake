# memfix verify: the example candidates of examples/candidates/
# (built there as host-mode shared libraries) through mf_verify and the command
# in-process (tests/unit/test_verify.c), and end to end through the built
# memfix binary, which must export its symbols for the candidates to load.
if(MF_BUILD_TESTS AND MF_VERIFY_EXAMPLES AND MF_HAVE_HOST_KERNELS AND COMMAND cudahost_add_library)
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

  # A rejection names the output, its element in the op's own axes and the defense: the element patterns
  set(_el_mm "\\(row=[0-9]+, col=[0-9]+\\)")                          # matmul C
  set(_el_in_mm "\\([a-z]+=[0-9]+, [a-z]+=[0-9]+\\)")                    # matmul A, B (no '|': verify_expect splits there)
  set(_el_bhrc "\\(b=[0-9]+, h=[0-9]+, row=[0-9]+(, col=[0-9]+)?\\)")  # attention, linear attention
  set(_el_bthd "\\(b=[0-9]+, t=[0-9]+, hk?=[0-9]+, (d|slot|branch)=[0-9]+\\)")   # rope, nsa
  set(_el_ce "\\((token=[0-9]+(, d=[0-9]+)?|class=[0-9]+(, d=[0-9]+)?|scalar)\\)") # cross_entropy
  set(_el_npt "\\((b=[0-9]+, s=[0-9]+, [dfr]=[0-9]+|[dr]=[0-9]+, [fr]=[0-9]+|f=[0-9]+)\\)")     # npt
  # every case runs in several thread orders: sanitizer builds get the usual timeout factor
  math(EXPR _mf_verify_timeout "120 * ${MF_TEST_TIMEOUT_MULTIPLIER}")
  math(EXPR _mf_verify_timeout_long "300 * ${MF_TEST_TIMEOUT_MULTIPLIER}")
  # Fixed seeds everywhere (verify's default is a fresh seed per run): CI stays deterministic.
  set(_mf_verify_cmd $<TARGET_FILE:memfix-cli> verify --op matmul --symbol matmul_candidate --backend host
                     --seed 1 --cases 1)
  add_test(NAME test_verify_cli_correct.host COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_correct.so)
  set_tests_properties(test_verify_cli_correct.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "candidate ACCEPTED")
  add_test(NAME test_verify_cli_mutates_input.host
    COMMAND ${_mf_verify_cmd} --json --lib ${_mf_cand_dir}/libmatmul_mutates_input.so)
  set_tests_properties(test_verify_cli_mutates_input.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout}
    PASS_REGULAR_EXPRESSION "\"defense\":[ \t]*\"input-(mutation|write)\",[ \t\n]*\"reason\":[ \t]*\"(wrote to|changed) input A at ${_el_in_mm}")
  add_test(NAME test_verify_cli_hidden_alloc.host
    COMMAND ${_mf_verify_cmd} --lib ${_mf_cand_dir}/libmatmul_hidden_alloc.so)
  set_tests_properties(test_verify_cli_hidden_alloc.host PROPERTIES
    LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "REJECTED [^\n]* by hidden-allocation")

  # the other ops' examples through the binary: one correct and one wrong each
  function(mf_verify_cli_test op lib sym regex)
    add_test(NAME test_verify_cli_${lib}.host
      COMMAND $<TARGET_FILE:memfix-cli> verify --op ${op} --symbol ${sym} --backend host --orders 0
              --seed 1 --cases 1 --lib ${_mf_cand_dir}/lib${lib}.so)
    set_tests_properties(test_verify_cli_${lib}.host PROPERTIES
      LABELS "unit;host" TIMEOUT ${_mf_verify_timeout} PASS_REGULAR_EXPRESSION "${regex}")
  endfunction()
  mf_verify_cli_test(cross_entropy.backward ce_backward_correct ce_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(cross_entropy.backward ce_backward_no_grad_loss ce_backward_candidate
                     "REJECTED [^\n]* by equivalence: grad_(hidden|weight|bias): [^\n]* at ${_el_ce}")
  # the memory defenses (src/testbed/mem_defense.c), one cheating candidate each
  mf_verify_cli_test(matmul matmul_scratch_overrun matmul_candidate "REJECTED [^\n]* by scratch-guard")
  mf_verify_cli_test(matmul matmul_static_scratch matmul_candidate "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(matmul matmul_pinned_scratch matmul_candidate "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(matmul matmul_negate_restore matmul_candidate
                     "REJECTED [^\n]* by input-write: wrote to input A at ${_el_in_mm} during the call")
  mf_verify_cli_test(cross_entropy ce_forward_calls_reference ce_forward_candidate
                     "REJECTED [^\n]* by scratch-ceiling")
  mf_verify_cli_test(cross_entropy ce_forward_correct ce_forward_candidate "candidate ACCEPTED")
  # the input guards: a read past the end of hidden brings a NaN into the loss
  mf_verify_cli_test(cross_entropy ce_forward_reads_past_hidden ce_forward_candidate
                     "REJECTED [^\n]* by nan-prefill: lse: NaN/Inf pattern differs at 1 of [0-9]+ entries \\(first at \\(token=[0-9]+\\)")
  mf_verify_cli_test(rope rope_correct rope_candidate "candidate ACCEPTED")
  mf_verify_cli_test(rope rope_ignores_direction rope_candidate
                     "REJECTED [^\n]* by equivalence: (q_out|k_out): [^\n]* at ${_el_bthd}")
  mf_verify_cli_test(attention.forward attention_forward_correct attention_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(attention.forward attention_forward_no_scale attention_forward_candidate
                     "REJECTED [^\n]* by equivalence: (out|lse): [^\n]* at ${_el_bhrc}")
  mf_verify_cli_test(attention.backward attention_backward_correct attention_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(attention.backward attention_backward_dk_sign attention_backward_candidate
                     "REJECTED [^\n]* by equivalence: dk: [^\n]* at ${_el_bhrc}")
  mf_verify_cli_test(npt.forward npt_forward_correct npt_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(npt.forward npt_forward_no_modulation npt_forward_candidate
                     "REJECTED [^\n]* by equivalence: out: [^\n]* at ${_el_npt}")
  mf_verify_cli_test(npt.backward npt_backward_correct npt_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(npt.backward npt_backward_no_modulation npt_backward_candidate
                     "REJECTED [^\n]* by equivalence: grad_[hWABm]: [^\n]* at ${_el_npt}")
  mf_verify_cli_test(linear_attention.forward linear_attention_forward_correct linear_attention_forward_candidate
                     "candidate ACCEPTED")
  mf_verify_cli_test(linear_attention.forward linear_attention_forward_no_state linear_attention_forward_candidate
                     "REJECTED [^\n]* by equivalence: (out|final_kv|final_z): [^\n]* at \\(b=[0-9]+, h=[0-9]+, (row|d)=[0-9]+")
  mf_verify_cli_test(linear_attention.backward linear_attention_backward_correct linear_attention_backward_candidate
                     "candidate ACCEPTED")
  mf_verify_cli_test(linear_attention.backward linear_attention_backward_no_final_grad
                     linear_attention_backward_candidate
                     "REJECTED [^\n]* by equivalence: (dq|dk|dv|d_initial_kv|d_initial_z): [^\n]* at \\(b=[0-9]+, h=[0-9]+, (row|d)=[0-9]+")
  mf_verify_cli_test(nsa.forward nsa_forward_correct nsa_forward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(nsa.forward nsa_forward_ungated_cmp nsa_forward_candidate
                     "REJECTED [^\n]* by equivalence: (out|lse): [^\n]* at ${_el_bthd}")
  # the right blocks in the wrong order: every tolerance passes, only sel compared exactly rejects it
  mf_verify_cli_test(nsa.forward nsa_forward_sel_by_rank nsa_forward_candidate
                     "REJECTED [^\n]* by equivalence: sel: selected block at \\(b=[0-9]+, t=[0-9]+, hk=[0-9]+, slot=[0-9]+\\) is")
  mf_verify_cli_test(nsa.backward nsa_backward_correct nsa_backward_candidate "candidate ACCEPTED")
  mf_verify_cli_test(nsa.backward nsa_backward_no_pool_grad nsa_backward_candidate
                     "REJECTED [^\n]* by equivalence: (dq|dk|dv): [^\n]* at ${_el_bthd}")

  # the candidate runs in a worker process (bin/memfix-verify-worker)
  # with a time limit and in several thread orders; exit statuses are checked.
  function(mf_verify_expect name rc must)
    cmake_parse_arguments(A "" "MUST_NOT" "ARGS" ${ARGN})
    # the fixed cases only (--cases 0): these are about isolation and thread orders, not about cases
    string(REPLACE ";" "|" _a "verify;--backend;host;--seed;1;--cases;0;${A_ARGS}")
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
  mf_verify_expect(destructor_exit 1 "by equivalence: C: [^\n]* at ${_el_mm}|candidate REJECTED"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_destructor_exit.so)
  # a constructor raising the tolerance rows reaches only the worker's table
  mf_verify_expect(tolerance_ctor 1 "by equivalence: C: [^\n]* at ${_el_mm}" MUST_NOT "by (exit|crash|protocol)"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_tolerance_ctor.so)
  # endless loops in host code and in a kernel: killed after --timeout
  mf_verify_expect(host_loop 1 "\\[f[0-9]+: f32 M=17 N=33 K=19 ta=0 tb=0\\] by timeout"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_host_loop.so --timeout 5 --orders 0)
  mf_verify_expect(kernel_loop 1 "K=19 ta=1 tb=0\\] by timeout"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_kernel_loop.so --timeout 5 --orders 0)
  # a hang is judged once: the cases after it are not run, unless --keep-going
  mf_verify_expect(host_loop_stops 1 "[1-9][0-9]* not run \\(a timeout ends the run.*by timeout"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_host_loop.so --timeout 5 --orders 0)
  mf_verify_expect(host_loop_keep_going 1 "by timeout" MUST_NOT "not run"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_host_loop.so --timeout 5 --orders 0 --keep-going)
  # a hang on every third call, with the default options (no --timeout: the limit derived from memfix's own
  # time on the case, at least MF_VERIFY_TIMEOUT_FLOOR_S): rejected by timeout in seconds, the run ended
  add_test(NAME test_verify_cli_hang_third.host
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:memfix-cli>
            "-DARGS=verify|--backend|host|--seed|1|--op|matmul|--symbol|matmul_candidate|--lib|${_mf_cand_dir}/libmatmul_hang_third.so"
            -DRC=1 "-DMUST=by timeout: no answer within [0-9.]+ s \\(the default limit: [0-9.]+ x memfix's own [0-9.e-]+ s on this case, at least [0-9.]+ s|not run \\(a timeout ends the run"
            -DMAX_SECONDS=120 -P ${MF_ROOT}/tests/support/verify_expect.cmake)
  set_tests_properties(test_verify_cli_hang_third.host PROPERTIES LABELS "unit;host" TIMEOUT ${_mf_verify_timeout_long})
  # stopped by SIGTERM, SIGINT and SIGKILL while that candidate hangs, verify leaves no worker running
  add_test(NAME test_verify_orphans.host
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/verify_orphans.sh $<TARGET_FILE:memfix-cli>
            ${_mf_cand_dir}/libmatmul_host_loop.so)
  set_tests_properties(test_verify_orphans.host PROPERTIES LABELS "unit;host" TIMEOUT ${_mf_verify_timeout_long})
  # a shared-memory race right only in forward order
  mf_verify_expect(smem_race 1 "by schedule: passed in forward order, failed in [^\n]*: C: [^\n]* at ${_el_mm}"
    MUST_NOT "by (equivalence|nan-prefill|exit|crash)"
    ARGS ${_mm} ${_mf_cand_dir}/libmatmul_smem_race.so --orders 1)
  # the red team's attacks on the isolation (examples/candidates/rt_*; docs/verify.md "Isolation")
  set(_rt --op matmul --symbol matmul_candidate --orders 0 --lib)
  mf_verify_expect(rt_call_parity 1 "by determinism: [^\n]*first in C at ${_el_mm}" ARGS ${_rt} ${_mf_cand_dir}/librt_matmul_call_parity.so)
  mf_verify_expect(rt_loop_second_call 1 "\\[f2: [^\n]*\\] by timeout"
    ARGS ${_rt} ${_mf_cand_dir}/librt_matmul_loop_second_call.so --case f2 --timeout 3)
  # kill(getppid(), SIGTERM): ignored by verify, the case rejected by protocol, exit status 1
  mf_verify_expect(rt_kill_parent 1 "by protocol: the candidate's process \\(pid [0-9]+\\) sent signal 15"
    ARGS ${_rt} ${_mf_cand_dir}/librt_matmul_kill_parent.so)
  # a forged verdict on fd 1, fd 2 and /proc/<verify>/fd/1 never reaches verify's stdout
  mf_verify_expect(rt_fake_accept 1 "candidate REJECTED|by equivalence: C: [^\n]* at ${_el_mm}" MUST_NOT "FORGED"
    ARGS ${_rt} ${_mf_cand_dir}/librt_matmul_fake_accept.so)
  mf_verify_expect(rt_close_fd3 1 "REJECTED [^\n]* by exit"
    ARGS ${_rt} ${_mf_cand_dir}/librt_matmul_close_fd3.so --timeout 10)
  # seed 3's g2 (S=269, l'=4: 68 selection blocks) is accepted: the example nsa candidates take any S and l'
  mf_verify_expect(nsa_many_blocks 0 "candidate ACCEPTED"
    ARGS --op nsa.forward --symbol nsa_forward_candidate --orders 0 --seed 3 --case g2
         --lib ${_mf_cand_dir}/libnsa_forward_correct.so)
  # its own SIGSEGV handler unprotects A's pages: the changed handler is the input-write defense's
  mf_verify_expect(rt_sigsegv_handler 1 "by input-write: changed the SIGSEGV handler"
    MUST_NOT "candidate ACCEPTED|by (equivalence|crash|exit)"
    ARGS ${_rt} ${_mf_cand_dir}/librt_sigsegv_handler.so)
  # a race that forward and reverse order both hide: the random orders (seeded by --seed) find it
  mf_verify_expect(rt_order_race 1 "by schedule: passed in forward order, failed in random[^\n]*: C: [^\n]* at ${_el_mm}"
    ARGS --op matmul --symbol matmul_candidate --lib ${_mf_cand_dir}/librt_matmul_order_race.so --orders 2)
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

# memfix verify's cases (docs/verify.md "Cases"): case ids and
# the random case generators in process (test_verify_cases: ids, coverage,
# reproducibility; test_verify_cases_own, slow: memfix's own entries on random
# cases of every target through the testbed), and
# through the binary: cheating candidates that pass every fixed case are rejected
# on a random case ("REJECTED [g<i>: ..."), the correct examples stay accepted
# with several seeds, and --list-cases, --case, --large and --dump.
if(MF_BUILD_TESTS AND MF_VERIFY_EXAMPLES AND MF_HAVE_HOST_KERNELS AND COMMAND cudahost_add_library)
  set(_mf_cand_dir ${CMAKE_BINARY_DIR}/candidates/host)
  mf_add_check_test(test_verify_cases
    SOURCES unit/test_verify_cases.c
    LABELS unit
    BACKENDS host
    TIMEOUT 300)
  add_test(NAME test_verify_cases_own.host COMMAND $<TARGET_FILE:test_verify_cases>)
  set_tests_properties(test_verify_cases_own.host PROPERTIES LABELS "unit;host;slow" TIMEOUT 600
    ENVIRONMENT "MF_TEST_BACKEND=host;MF_VERIFY_CASES_OWN=1;CK_RUN_CASE=own;CK_DEFAULT_TIMEOUT=600")

  # mf_verify_cases_test(<name> <target> <lib> <symbol> <regex> [args...])
  function(mf_verify_cases_test name target lib sym regex)
    add_test(NAME test_verify_cases_${name}.host
      COMMAND $<TARGET_FILE:memfix-cli> verify --op ${target} --symbol ${sym} --backend host
              --lib ${_mf_cand_dir}/lib${lib}.so --seed 1 --orders 0 ${ARGN})
    set_tests_properties(test_verify_cases_${name}.host PROPERTIES
      LABELS "unit;host" TIMEOUT 300 PASS_REGULAR_EXPRESSION "${regex}")
  endfunction()
  set(_rand "REJECTED \\[g[0-9]+: [^\n]* by equivalence")
  # ... naming the output and its element in the op's axes
  set(_rand_mm "${_rand}: C: [^\n]* at ${_el_mm}")
  set(_rand_rope "${_rand}: (q_out|k_out): [^\n]* at ${_el_bthd}")
  set(_rand_ce "${_rand}: (loss|lse): [^\n]* at ${_el_ce}")
  set(_rand_nsa "${_rand}: (out|lse|sel|dq|dk|dv|dg_[a-z]+): [^\n]* at \\(b=[0-9]+, t=[0-9]+, hk?=[0-9]+")
  # the cheats: accepted by the fixed cases alone, rejected on random ones (any seed)
  mf_verify_cases_test(fixed_shapes_fixed_only matmul matmul_fixed_shapes matmul_candidate
                       "candidate ACCEPTED" --cases 0)
  mf_verify_cases_test(fixed_shapes matmul matmul_fixed_shapes matmul_candidate
                       "REJECTED \\[g[0-9]+: [^\n]* by nan-prefill: C: NaN/Inf pattern differs [^\n]*first at ${_el_mm}"
                       --seed 11 --cases 2)
  mf_verify_cases_test(f32_ignores_tb matmul matmul_f32_ignores_tb matmul_candidate "${_rand_mm}" --seed 5 --cases 8)
  mf_verify_cases_test(bf16_ta_only matmul matmul_bf16_ta_only matmul_candidate "${_rand_mm}" --seed 6 --cases 8)
  mf_verify_cases_test(beyond_4096 matmul matmul_beyond_4096 matmul_candidate "${_rand_mm}" --seed 7 --cases 1)
  mf_verify_cases_test(rope_i32_as_i64 rope rope_i32_as_i64 rope_candidate "${_rand_rope}" --seed 8)
  mf_verify_cases_test(rope_ignores_batch_stride rope rope_ignores_batch_stride rope_candidate "${_rand_rope}" --seed 9)
  mf_verify_cases_test(ce_ignore_minus100 cross_entropy ce_forward_ignore_minus100 ce_forward_candidate "${_rand_ce}"
                       --seed 10)
  mf_verify_cases_test(rope_bf16_forward_wrong rope rope_bf16_forward_wrong rope_candidate "${_rand_rope}" --seed 3)
  mf_verify_cases_test(nsa_fixed_shapes_fixed_only nsa.forward nsa_forward_fixed_shapes nsa_forward_candidate
                       "candidate ACCEPTED" --cases 0)
  mf_verify_cases_test(nsa_fixed_shapes nsa.forward nsa_forward_fixed_shapes nsa_forward_candidate "${_rand_nsa}"
                       --cases 1)
  # the red team (examples/candidates/rt_*): cheats tuned to what the cases left out
  mf_verify_cases_test(rt_beyond_65536 matmul rt_matmul_beyond_65536 matmul_candidate "${_rand_mm}" --seed 12
                       --cases 1)
  mf_verify_cases_test(rt_rope_bf16_i64 rope rt_rope_bf16_i64 rope_candidate "${_rand_rope}" --seed 5 --cases 16)
  mf_verify_cases_test(rt_rope_i64_backward rope rt_rope_i64_backward rope_candidate "${_rand_rope}" --seed 5
                       --cases 16)
  mf_verify_cases_test(rt_ce_ignores_softcap cross_entropy rt_ce_ignores_softcap ce_forward_candidate
                       "REJECTED \\[f[0-9]+: [^\n]*cap=[1-9][^\n]* by equivalence: (loss|lse): [^\n]* at ${_el_ce}" --cases 0)
  mf_verify_cases_test(rt_ce_zloss_sum cross_entropy rt_ce_zloss_sum ce_forward_candidate
                       "REJECTED \\[[fg][0-9]+: [^\n]* sum [^\n]* by equivalence: (loss|lse): [^\n]* at ${_el_ce}" --cases 0)
  # the correct examples: accepted with several seeds (the default random cases each: 4, rope 16)
  foreach(_seed 1 2)
    mf_verify_cases_test(matmul_correct_${_seed} matmul matmul_correct matmul_candidate "candidate ACCEPTED"
                         --seed ${_seed} --cases 4)
    mf_verify_cases_test(rope_correct_${_seed} rope rope_correct rope_candidate "candidate ACCEPTED" --seed ${_seed})
    mf_verify_cases_test(ce_forward_correct_${_seed} cross_entropy ce_forward_correct ce_forward_candidate
                         "candidate ACCEPTED" --seed ${_seed})
  endforeach()
  foreach(_t IN ITEMS "cross_entropy.backward:ce_backward" "attention.forward:attention_forward"
                      "attention.backward:attention_backward" "npt.forward:npt_forward" "npt.backward:npt_backward"
                      "linear_attention.forward:linear_attention_forward"
                      "linear_attention.backward:linear_attention_backward")
    string(REPLACE ":" ";" _f "${_t}")
    list(GET _f 0 _op)
    list(GET _f 1 _lib)
    mf_verify_cases_test(${_lib}_correct_3 ${_op} ${_lib}_correct ${_lib}_candidate "candidate ACCEPTED" --seed 3)
  endforeach()
  # seed 1 of matmul, rope and cross_entropy in every build (matmul's and cross_entropy's not under a sanitizer: see
  # the end of this file); the other seeds and targets in the default one (minutes under the sanitizers)
  foreach(_t matmul_correct_2 rope_correct_2 ce_forward_correct_2 ce_backward_correct_3 attention_forward_correct_3
             attention_backward_correct_3 npt_forward_correct_3 npt_backward_correct_3
             linear_attention_forward_correct_3 linear_attention_backward_correct_3)
    set_tests_properties(test_verify_cases_${_t}.host PROPERTIES LABELS "unit;host;slow")
  endforeach()
  # the options
  mf_verify_cases_test(one_case matmul matmul_correct matmul_candidate "1 cases, 1 passed" --seed 4 --case g3)
  mf_verify_cases_test(bad_case matmul matmul_correct matmul_candidate "no case 'g'" --case g)
  add_test(NAME test_verify_cases_list.host
    COMMAND $<TARGET_FILE:memfix-cli> verify --op rope --list-cases --seed 42 --cases 2)
  set_tests_properties(test_verify_cases_list.host PROPERTIES LABELS "unit;host" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "seed 42[^\n]*\nf0 +f32 B=2 T=16[^\n]*\n.*g1 +[a-z0-9]+ B=[^\n]*\nlarge ")
  mf_verify_cases_test(large_skipped matmul matmul_correct matmul_candidate
                       "large case skipped: \\[[^\n]*M=65533[^\n]*\\] needs ~[0-9.]+ GiB of memory, 0.0 GiB available"
                       --cases 0 --large)
  set_tests_properties(test_verify_cases_large_skipped.host PROPERTIES ENVIRONMENT "MF_VERIFY_MEMORY_LIMIT=1000")
  mf_verify_cases_test(seed_json matmul matmul_correct matmul_candidate "\"case\":[ \t]*\"g0\",[ \t\n]*\"seed\":[ \t]*\"77\""
                       --seed 77 --cases 1 --json)
  # docs/verify.md's numbers come from the code: each target's fixed cases, the default random cases and the
  # default time limit, compared with `memfix verify --list-cases` and `--help` (the message names each one
  # that differs)
  add_test(NAME test_verify_doc_counts.host
    COMMAND ${CMAKE_COMMAND} -DMEMFIX=$<TARGET_FILE:memfix-cli> -DDOC=${MF_ROOT}/docs/verify.md
            -P ${MF_ROOT}/tests/support/verify_doc_counts.cmake)
  set_tests_properties(test_verify_doc_counts.host PROPERTIES LABELS "unit;host" TIMEOUT 120)
  add_test(NAME test_verify_cases_dump.host
    COMMAND ${CMAKE_COMMAND} -DMEMFIX=$<TARGET_FILE:memfix-cli> -DLIB=${_mf_cand_dir}/libmatmul_beyond_4096.so
            -DDIR=${CMAKE_BINARY_DIR}/test-dumps/verify-cases-dump -P ${CMAKE_CURRENT_LIST_DIR}/support/verify_dump_test.cmake)
  set_tests_properties(test_verify_cases_dump.host PROPERTIES LABELS "unit;host" TIMEOUT 120)
endif()

# memfix verify's memory and measurement defenses (docs/verify.md "Memory defenses" and "Measured by
# memfix"): every byte of every input is write-protected in host mode (a small input, an input's partial
# last page, a write by cudaMemcpy), each undone before the candidate returns.
if(MF_BUILD_TESTS AND MF_VERIFY_EXAMPLES AND MF_HAVE_HOST_KERNELS AND COMMAND cudahost_add_library)
  set(_mf_cand_dir ${CMAKE_BINARY_DIR}/candidates/host)
  set(_mm --op matmul --symbol matmul_candidate --orders 0 --lib)
  # A of f0 (M=1, K=1) is 4 bytes: rejected there, by the write-protection
  mf_verify_expect(mem_small_negate_restore 1 "\\[f0: f32 M=1 N=1 K=1[^\n]*\\] by input-write: wrote to input A at \\(row=0, k=0\\)"
    MUST_NOT "by (input-mutation|equivalence|crash|exit)"
    ARGS ${_mm} ${_mf_cand_dir}/libmem_small_negate_restore.so)
  # B of f7 (bf16 K=7 x N=1000) is 14000 bytes, 3.4 pages: its last element is bytes 13998..13999
  mf_verify_expect(mem_last_element 1
    "\\[f7: bf16 M=3 N=1000 K=7 ta=0 tb=1\\] by input-write: wrote to input B at \\(col=999, k=6\\) during the call \\(byte 13998 of 14000"
    MUST_NOT "by (input-mutation|equivalence|crash|exit)"
    ARGS ${_mm} ${_mf_cand_dir}/libmem_last_element.so)
  mf_verify_expect(mem_memcpy_restore 1 "\\] by input-write: wrote to input A at ${_el_in_mm}"
    MUST_NOT "by (input-mutation|equivalence|crash|exit)|candidate ACCEPTED"
    ARGS ${_mm} ${_mf_cand_dir}/libmem_memcpy_restore.so)
  # The worker's own measurements (a library in its process could forge them) are backed by memfix's from
  # outside it: a 64 MiB workspace mapped with mmap in host code escapes every in-process counter, and the
  # worker's peak RSS (/proc) rejects it on every case (matmul's ceiling is 0).
  # (not under the sanitizers: a sanitizer-built worker's resident memory, shadow and quarantine, is not
  # measured, and nothing inside the worker sees an mmap)
  if(NOT MF_SANITIZER)
  mf_verify_expect(meas_mmap_scratch 1 "by process-memory: memory measured outside the candidate|cases, 0 passed"
    MUST_NOT "by (scratch-ceiling|equivalence|crash|exit)"
    ARGS ${_mm} ${_mf_cand_dir}/libmeas_mmap_scratch.so)
  endif()
endif()

# The candidate interface (include/memfix/verify.h): with every op's header, before or after verify.h,
# each candidate type compiles under its own name; with verify.h alone, the compiler's error names the
# header the type is declared in. The C compiler, syntax only (any build).
foreach(_vh op_after op_before without_op)
  add_test(NAME verify_header.${_vh}
           COMMAND ${CMAKE_C_COMPILER} -std=c11 -Wall -Wextra -Werror -fsyntax-only -I${MF_ROOT}/include
                   ${MF_ROOT}/tests/compile/verify_h_${_vh}.c)
  set_tests_properties(verify_header.${_vh} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
set_tests_properties(verify_header.without_op PROPERTIES
  PASS_REGULAR_EXPRESSION "unknown type name [^\n]*mf_matmul_candidate_fn_is_declared_in_memfix_matmul_h")

# Candidates that cheat or are wrong, each rejected for its own reason: the verdict is verify's logic, which
# the sanitizer legs would only repeat (the memory-safety of the code they reach is checked under ASan by the
# correct candidates' and test_verify's runs of the same entries). Labelled slow, they run in the default leg
# only: about 5 minutes of the ASan leg's test time, 3 of them NSA's.
foreach(_t test_verify_cli_nsa_forward_ungated_cmp test_verify_cli_nsa_forward_sel_by_rank
           test_verify_cli_nsa_backward_no_pool_grad test_verify_cli_linear_attention_forward_no_state
           test_verify_cli_linear_attention_backward_no_final_grad test_verify_cli_ce_backward_no_grad_loss
           test_verify_cases_nsa_fixed_shapes test_verify_cases_nsa_fixed_shapes_fixed_only
           test_verify_cases_f32_ignores_tb test_verify_cases_bf16_ta_only test_verify_cases_ce_ignore_minus100)
  if(TEST ${_t}.host)
    set_property(TEST ${_t}.host APPEND PROPERTY LABELS slow)
  endif()
endforeach()

# Under a sanitizer, the longest correct-candidate runs are left to the default build as well (labelled slow
# there): NSA's forward and backward examples (140 s of the ASan leg's CPU; the NSA entries also go through
# mf_verify under ASan in test_nsa_equiv's verify case) and seed 1's random cases of cross_entropy and matmul
# (95 s; test_verify_cases_one_case and _seed_json still run random matmul cases through the binary there).
if(MF_SANITIZER)
  foreach(_t test_verify_cli_nsa_forward_correct test_verify_cli_nsa_backward_correct
             test_verify_cases_ce_forward_correct_1 test_verify_cases_matmul_correct_1)
    if(TEST ${_t}.host)
      set_property(TEST ${_t}.host APPEND PROPERTY LABELS slow)
    endif()
  endforeach()
endif()
