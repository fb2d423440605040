# Repository hygiene (label unit): no tracked file names an absolute path of this
# machine (ci/check_no_absolute_paths.cmake; seed documents are cited by file
# name). The self-test runs the checker on a generated tree without .git that
# holds one such path and passes only on the expected failure report.
add_test(NAME repo.no_absolute_paths
         COMMAND ${CMAKE_COMMAND} -DROOT=${MF_ROOT} -P ${MF_ROOT}/ci/check_no_absolute_paths.cmake)
set_tests_properties(repo.no_absolute_paths PROPERTIES LABELS unit TIMEOUT 120)

set(_mf_abs_selftest ${CMAKE_BINARY_DIR}/abs-path-selftest)
set(_mf_abs_dir home) # not spelled out as a path here: this file is checked too
file(WRITE ${_mf_abs_selftest}/src/ok.c "/* cites 000_15d34a4d5aa90e13.txt; a/${_mf_abs_dir}/b is relative */\n")
file(WRITE ${_mf_abs_selftest}/docs/bad.md "line one\nsee /${_mf_abs_dir}/someone/seeds/000.txt; and more\n")
add_test(NAME repo.no_absolute_paths_selftest
         COMMAND ${CMAKE_COMMAND} -DROOT=${_mf_abs_selftest} -P ${MF_ROOT}/ci/check_no_absolute_paths.cmake)
set_tests_properties(repo.no_absolute_paths_selftest PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "docs/bad\\.md:2: see /${_mf_abs_dir}/someone.*1 file\\(s\\) name an absolute path")

# Every C/C++/CUDA source follows .clang-format (skipped, 77, without clang-format 14). It reads the sources,
# not the build: registered in builds without a sanitizer or coverage only (CI checks the tree once).
if(NOT MF_SANITIZER AND NOT MF_COVERAGE)
  add_test(NAME repo.format COMMAND ${MF_ROOT}/ci/check_format.sh ${MF_ROOT})
  set_tests_properties(repo.format PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
