# Kernel resource budgets (issue 8, item 6): one CTest test per optimized/*.cu
# compiles the file for sm_90 with ptxas verbose output (nvcc -cubin, device code
# only, the library's own CUDA include directories and definitions) and fails if
# a kernel spills, exceeds the `// mf-budget:` stated beside it, or states none.
# The checker is plain CMake: ci/check_kernel_resources.cmake (format there).
# Registered only when nvcc is available (MF_HAVE_CUDA); label unit.
# Self-tests (kernel_resources_selftest.*) feed it deliberately bad kernels from
# tests/resources/ and require the specific failure message, so the check is
# shown to be able to fail.
if(NOT MF_HAVE_CUDA OR NOT TARGET memfix_cuda)
  return()
endif()

set(MF_RESOURCE_ARCH 90 CACHE STRING "Architecture the kernel resource budgets are stated for (sm_XX)")
find_program(MF_CXXFILT NAMES cu++filt c++filt HINTS ${CUDAToolkit_BIN_DIR})
set(_mf_res_dir ${CMAKE_BINARY_DIR}/kernel-resources)
# The library's CUDA flags: the memfix_cuda target's include directories and
# definitions ('|'-separated: the checker splits them), plus its language standard.
set(_mf_res_flags
  "-I$<JOIN:$<TARGET_PROPERTY:memfix_cuda,INCLUDE_DIRECTORIES>,|-I>|-D$<JOIN:$<TARGET_PROPERTY:memfix_cuda,COMPILE_DEFINITIONS>,|-D>|-std=c++17")

function(_mf_add_resource_test name source)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DSOURCE=${source}
                   -DARCH=${MF_RESOURCE_ARCH} "-DFLAGS=${_mf_res_flags}"
                   -DOUT=${_mf_res_dir}/${name}.cubin -DCXXFILT=${MF_CXXFILT}
                   -P ${MF_ROOT}/ci/check_kernel_resources.cmake)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300 ${ARGN})
endfunction()

file(GLOB _mf_res_sources CONFIGURE_DEPENDS ${MF_ROOT}/optimized/*.cu)
foreach(src IN LISTS _mf_res_sources)
  get_filename_component(stem ${src} NAME_WE)
  _mf_add_resource_test(kernel_resources.${stem} ${src})
endforeach()

# The checker must reject each kind of violation, for the right reason.
foreach(case IN ITEMS "spill|spills registers \\([1-9]"
                      "over_regs|exceeds its register budget regs<=4"
                      "over_smem|exceeds its shared-memory budget smem<=1024"
                      "no_budget|without_budget_kernel: no mf-budget stated")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 stem)
  list(GET case 1 expect)
  _mf_add_resource_test(kernel_resources_selftest.${stem} ${MF_ROOT}/tests/resources/${stem}.cu
                        PASS_REGULAR_EXPRESSION "${expect}")
endforeach()

# The fused cross-entropy's bf16 kernels run on tensor cores: their sm_90 PTX
# contains mma.sync (issue 14). The self-test shows the check can fail: the
# label-count kernel has none.
foreach(case IN ITEMS "ptx_mma.cross_entropy_fused|ce_fused_.wd_kernelI13__nv_bfloat16|"
                      "ptx_mma_selftest.count_kernel|ce_fused_count_kernel|has no 'mma.sync'")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 name)
  list(GET case 1 entry)
  list(GET case 2 expect)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
                   -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu -DARCH=${MF_RESOURCE_ARCH}
                   "-DENTRY=${entry}" -DINSTR=mma.sync "-DFLAGS=${_mf_res_flags}"
                   -DOUT=${_mf_res_dir}/${name}.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300)
  if(expect)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${expect}")
  endif()
endforeach()
