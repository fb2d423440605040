# memfix plan and bench: the training-memory model's exact values and
# the presets (test_plan), the bench CSV (test_bench), and ci/plot.sh on a CSV
# that bench wrote (plot_sh: renders charts when gnuplot is installed, else
# checks that plot.sh says gnuplot is missing and exits 3).
mf_add_check_test(test_plan SOURCES unit/test_plan.c LABELS unit memory)
target_link_libraries(test_plan PRIVATE mf_cli)
if(MF_HAVE_HOST_KERNELS) # a reference-only build registers no ops: nothing to bench
  mf_add_check_test(test_bench SOURCES unit/test_bench.c LABELS unit TIMEOUT 300)
  target_link_libraries(test_bench PRIVATE mf_cli)
  add_test(NAME plot_sh.host
           COMMAND bash ${MF_ROOT}/tests/plot_test.sh $<TARGET_FILE:memfix-cli> ${MF_ROOT}/ci/plot.sh
                   ${CMAKE_BINARY_DIR}/test-plot)
  set_tests_properties(plot_sh.host PROPERTIES LABELS "unit;host" TIMEOUT 120)
endif()
