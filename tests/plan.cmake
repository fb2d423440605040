# memfix plan and bench: the training-memory model's exact values and the presets
# (test_plan), the fit on a GPU (test_plan_fit, plan.gpu_mem.*), bench's table, CSV and JSON
# (test_bench), and ci/plot.sh on a CSV that bench wrote (plot_sh: renders charts when gnuplot is
# installed, else checks that plot.sh says gnuplot is missing and exits 3).
mf_add_check_test(test_plan SOURCES unit/test_plan.c LABELS unit memory)
target_link_libraries(test_plan PRIVATE mf_cli)
# --gpu-mem: sizes, the configured total, the verdict and the changes that make a step fit
mf_add_check_test(test_plan_fit SOURCES unit/test_plan_fit.c LABELS unit memory)
target_link_libraries(test_plan_fit PRIVATE mf_cli)
# The same through the installed command, end to end: seed 000's step does not fit one 80 GB GPU
# and a change that makes it fit is listed with its total; seed 001's step at 1k fits (it ran in
# 59.6 GB on an 80 GB A100); a malformed size exits 2 with a message naming it.
add_test(NAME plan.gpu_mem.000 COMMAND memfix-cli plan --preset 000 --gpu-mem 80GB)
set_tests_properties(plan.gpu_mem.000 PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "verdict: does not fit, over by [0-9]+ \\([0-9.]+ GiB\\)\n.*\n +[1-9]\\. --[^\n]* total [0-9]+ \\([0-9.]+ GiB\\) +fits, headroom")
add_test(NAME plan.gpu_mem.001-1k COMMAND memfix-cli plan --preset 001-1k --gpu-mem 80GB)
set_tests_properties(plan.gpu_mem.001-1k PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "verdict: fits, headroom [0-9]+ \\([0-9.]+ GiB\\)")
add_test(NAME plan.gpu_mem.malformed COMMAND bash ${MF_ROOT}/tests/plan_gpu_mem_test.sh $<TARGET_FILE:memfix-cli>)
set_tests_properties(plan.gpu_mem.malformed PROPERTIES LABELS unit TIMEOUT 60)
if(MF_HAVE_HOST_KERNELS) # a reference-only build registers no ops: nothing to bench
  mf_add_check_test(test_bench SOURCES unit/test_bench.c LABELS unit TIMEOUT 300)
  target_link_libraries(test_bench PRIVATE mf_cli)
  add_test(NAME plot_sh.host
           COMMAND bash ${MF_ROOT}/tests/plot_test.sh $<TARGET_FILE:memfix-cli> ${MF_ROOT}/ci/plot.sh
                   ${CMAKE_BINARY_DIR}/test-plot)
  set_tests_properties(plot_sh.host PROPERTIES LABELS "unit;host" TIMEOUT 120)
endif()
