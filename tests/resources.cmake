# Kernel resource budgets: one CTest test per optimized/*.cu
# reads ptxas' verbose report of the file's sm_90 code (the library build's own compile,
# recorded by cmake/nvcc_resource_log.sh, or else nvcc -cubin with the library's own CUDA
# include directories and definitions) and fails if
# a kernel spills, exceeds the `// mf-budget:` stated beside it, or states none.
# A second test per file does the same for sm_80 (A100, the GPU of seed 001 and
# CI's other architecture), where a budget line may state sm_80:regs<=N and the
# like for the kernels ptxas gives more registers there; spill=0 holds on both.
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

# A file and architecture the library build compiles (MF_KERNEL_RESOURCE_LOG_ARCHS, src/CMakeLists.txt)
# is checked on ptxas' report of that compile (-DPTXAS_LOG), and its PTX checks read the PTX that compile
# kept (<stem>.keep/<stem>.compute_<arch>.ptx): nothing is compiled again. Any other (the self-tests'
# files, an architecture the build leaves out) is compiled by the test itself, which keeps its PTX
# (${name}.keep/<stem>.ptx). Either way the budget test is the fixture ${name} of the file's PTX checks.
# _mf_in_build_log(<source> <arch> <out>): <out> is TRUE when the library build records <source> for <arch>.
function(_mf_in_build_log source arch out)
  get_filename_component(_stem ${source} NAME_WE)
  get_filename_component(_dir ${source} DIRECTORY)
  set(_in FALSE)
  if(MF_KERNEL_RESOURCE_LOG_DIR AND _dir STREQUAL "${MF_ROOT}/optimized" AND "${_stem}:${arch}" IN_LIST
     MF_KERNEL_RESOURCE_LOG_ARCHS)
    set(_in TRUE)
  endif()
  set(${out} ${_in} PARENT_SCOPE)
endfunction()
function(_mf_ptx_of name source arch out)
  get_filename_component(_stem ${source} NAME_WE)
  _mf_in_build_log(${source} ${arch} _in)
  if(_in)
    set(${out} ${MF_KERNEL_RESOURCE_LOG_DIR}/${_stem}.keep/${_stem}.compute_${arch}.ptx PARENT_SCOPE)
  else()
    set(${out} ${_mf_res_dir}/${name}.keep/${_stem}.ptx PARENT_SCOPE)
  endif()
endfunction()
function(_mf_add_resource_test_arch name source arch)
  get_filename_component(_stem ${source} NAME_WE)
  _mf_in_build_log(${source} ${arch} _in)
  if(_in)
    set(_how -DPTXAS_LOG=${MF_KERNEL_RESOURCE_LOG_DIR}/${_stem}.ptxas.log)
  else()
    set(_how -DNVCC=${CMAKE_CUDA_COMPILER} "-DFLAGS=${_mf_res_flags}" -DOUT=${_mf_res_dir}/${name}.cubin
             -DKEEP_DIR=${_mf_res_dir}/${name}.keep)
  endif()
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DSOURCE=${source} -DARCH=${arch} ${_how} -DCXXFILT=${MF_CXXFILT}
                   -P ${MF_ROOT}/ci/check_kernel_resources.cmake)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300 FIXTURES_SETUP ${name} ${ARGN})
endfunction()
function(_mf_add_resource_test name source)
  _mf_add_resource_test_arch(${name} ${source} ${MF_RESOURCE_ARCH} ${ARGN})
endfunction()

file(GLOB _mf_res_sources CONFIGURE_DEPENDS ${MF_ROOT}/optimized/*.cu)
foreach(src IN LISTS _mf_res_sources)
  get_filename_component(stem ${src} NAME_WE)
  _mf_add_resource_test(kernel_resources.${stem} ${src})
  _mf_add_resource_test_arch(kernel_resources.${stem}.sm_80 ${src} 80)
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
# ... and apply a per-architecture override (sm_80:regs<=N) on that architecture only.
_mf_add_resource_test_arch(kernel_resources_selftest.arch_override.sm_80
                           ${MF_ROOT}/tests/resources/arch_override.cu 80
                           PASS_REGULAR_EXPRESSION "exceeds its register budget sm_80:regs<=4")
_mf_add_resource_test_arch(kernel_resources_selftest.arch_override.sm_90
                           ${MF_ROOT}/tests/resources/arch_override.cu 90
                           PASS_REGULAR_EXPRESSION "kernel resource budgets OK: arch_override.cu")
# ... and, reading a recorded multi-architecture report (tests/resources/arch_override.ptxas.log, as the
# library build records one), check only the entries of the architecture asked for: sm_80's register
# use is over its override and its device function spills; sm_90's entry is within budget.
foreach(_case IN ITEMS "80|spill_helper: spills registers.*exceeds its register budget sm_80:regs<=4"
                       "90|kernel resource budgets OK: arch_override.cu")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _arch)
  list(GET _case 1 _expect)
  add_test(NAME kernel_resources_selftest.log.sm_${_arch}
           COMMAND ${CMAKE_COMMAND} -DSOURCE=${MF_ROOT}/tests/resources/arch_override.cu -DARCH=${_arch}
                   -DPTXAS_LOG=${MF_ROOT}/tests/resources/arch_override.ptxas.log -DCXXFILT=${MF_CXXFILT}
                   -P ${MF_ROOT}/ci/check_kernel_resources.cmake)
  set_tests_properties(kernel_resources_selftest.log.sm_${_arch} PROPERTIES LABELS unit TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "${_expect}")
endforeach()
# ... and read the budgets of the files a source includes from its folder.
_mf_add_resource_test(kernel_resources_selftest.included ${MF_ROOT}/tests/resources/included.cu
                      PASS_REGULAR_EXPRESSION "included_over_regs_kernel.*exceeds its register budget regs<=4")

# The sm_90a budget tests (the wgmma kernels exist only there).
_mf_add_resource_test_arch(kernel_resources.cross_entropy_fused.sm_90a
                           ${MF_ROOT}/optimized/cross_entropy_fused.cu 90a)
# NSA's sm_90a code (its wgmma kernels; the other kernels as on sm_90): every kernel in budget.
_mf_add_resource_test_arch(kernel_resources.nsa.sm_90a ${MF_ROOT}/optimized/nsa.cu 90a TIMEOUT 600)

# PTX content checks (ci/check_ptx_contains.cmake): every entry named like one of <kernels> contains
# each of <instructions> ('|'-separated). They read the PTX that the budget test of the same file and
# architecture compiled (kernel_resources.<stem>, or .sm_<arch> off MF_RESOURCE_ARCH; its fixture), so
# each file is compiled once per architecture; ctest runs the fixture first, also under -R.
# _mf_add_ptx_test(<name> <source> <arch> <instructions> <kernels> [test properties...])
function(_mf_add_ptx_test name source arch instructions kernels)
  get_filename_component(_stem ${source} NAME_WE)
  set(fixture kernel_resources.${_stem})
  if(NOT arch STREQUAL MF_RESOURCE_ARCH)
    string(APPEND fixture .sm_${arch})
  endif()
  _mf_ptx_of(${fixture} ${source} ${arch} _ptx)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DSOURCE=${source} -DARCH=${arch}
                   -DPTX=${_ptx}
                   "-DINSTRUCTIONS=${instructions}" "-DKERNELS=${kernels}"
                   -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300 FIXTURES_REQUIRED ${fixture} ${ARGN})
endfunction()
set(_mf_ce ${MF_ROOT}/optimized/cross_entropy_fused.cu)
set(_mf_nsa ${MF_ROOT}/optimized/nsa.cu)

# The fused cross-entropy's bf16 kernels run on tensor cores: their sm_90 PTX
# contains mma.sync, ldmatrix and cp.async (the fused CE). The self-test shows the check can fail: the
# label-count kernel has none.
_mf_add_ptx_test(ptx_mma.cross_entropy_fused ${_mf_ce} ${MF_RESOURCE_ARCH}
                 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned|cp.async.cg.shared.global"
                 "ce_fused_fwd_mma_kernel|ce_fused_bwd_mma_kernel")
_mf_add_ptx_test(ptx_mma_selftest.count_kernel ${_mf_ce} ${MF_RESOURCE_ARCH}
                 mma.sync ce_fused_count_kernel PASS_REGULAR_EXPRESSION "ce_fused_count_kernel.*: no 'mma.sync")
# Its wgmma kernels (sm_90a only; stubs elsewhere): their sm_90a PTX contains wgmma.mma_async (and
# its fence, commit and wait) and cp.async; the sm_90a build of the file meets every budget (no spill,
# no stack frame).
_mf_add_ptx_test(ptx_wgmma.cross_entropy_fused ${_mf_ce} 90a
                 "wgmma.mma_async.sync.aligned.m64n|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned|cp.async.cg.shared.global"
                 "ce_fused_fwd_wgmma_kernel|ce_fused_bwd_wgmma_kernel")
# The forward's 128 x 256 tiles: m64n256k16.
_mf_add_ptx_test(ptx_wgmma.cross_entropy_fused_fwd ${_mf_ce} 90a
                 wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 ce_fused_fwd_wgmma_kernel)
# The backward: the recompute's m64n128k16 and the gradient products' m64n64k16 with
# imm-trans-b = 1, once with A K-major (G . W_strip) and once with A MN-major (G^T . hidden):
# the wrapper's immediates "scale-a, scale-b, trans-a, trans-b" after its predicate acc_in
# appear verbatim in the PTX.
_mf_add_ptx_test(ptx_wgmma.cross_entropy_fused_grad ${_mf_ce} 90a
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16|wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16|acc_in, 1, 1, 0, 1|acc_in, 1, 1, 1, 1"
                 ce_fused_bwd_wgmma_kernel)
# ... and the check can fail: their plain sm_90 PTX (the trapping stubs) has no wgmma.
_mf_add_ptx_test(ptx_wgmma_selftest.sm_90_stub ${_mf_ce} ${MF_RESOURCE_ARCH}
                 wgmma.mma_async ce_fused_fwd_wgmma_kernel
                 PASS_REGULAR_EXPRESSION "ce_fused_fwd_wgmma_kernel.*: no 'wgmma.mma_async")
# NSA's selected + sliding forward on wgmma (nsa_wg_fwd_kernel, every <D, WARPS>): S = Q K^T from two
# descriptors (K-major: "acc_in, 1, 1, 0, 0") and O += P V with P from registers and V MN-major
# ("acc_in, 1, 1, 1": imm-trans-b = 1).
_mf_add_ptx_test(ptx_wgmma.nsa_fwd ${_mf_nsa} 90a
                 "wgmma.mma_async.sync.aligned.m64n|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned|acc_in, 1, 1, 0, 0|acc_in, 1, 1, 1;|cp.async.cg.shared.global"
                 nsa_wg_fwd_kernel)
# nsa_wg_cmp_kernel (the compression branch and importances on wgmma) really is a wgmma kernel:
# S = Q Kc^T as m64n64k16 with both operands from descriptors (K-major: trans 0, 0), P Vc with P
# from registers, fences, groups and the cp.async tile pipeline, in each instantiation (D = 16/32/64);
# pass 1's FlashAttention-3 schedule: S of the next tile waited for alone (wait_group 1) and the
# ping-pong's named barriers (bar.arrive).
_mf_add_ptx_test(ptx_wgmma.nsa_cmp ${_mf_nsa} 90a
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16|acc_in, 1, 1, 0, 0|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned 1|fence.proxy.async|cp.async.cg.shared.global|bar.arrive"
                 nsa_wg_cmp_kernel)

# The tensor-core attention kernels really are tensor-core kernels: their sm_90
# PTX contains mma.sync (m16n8k16), ldmatrix and cp.async (tensor-core attention). The self-test feeds the check
# the SIMT kernels of attention.cu, which must fail for lack of mma.sync.
set(_mf_mma_instrs "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned|cp.async.cg.shared.global")
_mf_add_ptx_test(ptx_contains.attention_mma ${MF_ROOT}/optimized/attention_mma.cu
                 ${MF_RESOURCE_ARCH} "${_mf_mma_instrs}" "attn_mma_fwd_kernel|attn_mma_bwd_kernel")
# The NSA bf16 branches: the same instructions in its mma.sync kernels.
_mf_add_ptx_test(ptx_contains.nsa_mma ${_mf_nsa} ${MF_RESOURCE_ARCH} "${_mf_mma_instrs}"
                 "nsa_mma_fwd_kernel|nsa_mma_cmp_kernel|nsa_mma_bwd_kernel|nsa_mma_cmp_bwd_kernel")
_mf_add_ptx_test(ptx_contains_selftest.simt_attention ${MF_ROOT}/optimized/attention.cu
                 ${MF_RESOURCE_ARCH} "${_mf_mma_instrs}" attn_fwd_kernel
                 PASS_REGULAR_EXPRESSION "attn_fwd_kernel.*: no 'mma.sync")
# The causal linear attention's bf16 kernels: mma.sync and ldmatrix
# (they stage through registers, no cp.async).
_mf_add_ptx_test(ptx_contains.linear_attention_tc
                 ${MF_ROOT}/optimized/linear_attention.cu ${MF_RESOURCE_ARCH}
                 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned"
                 "la_tc_state_kernel|la_tc_tile_kernel|la_tc_dkdv_kernel")
