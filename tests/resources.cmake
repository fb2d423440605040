# Kernel resource budgets (issue 8, item 6): one CTest test per optimized/*.cu
# compiles the file for sm_90 with ptxas verbose output (nvcc -cubin, device code
# only, the library's own CUDA include directories and definitions) and fails if
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

function(_mf_add_resource_test_arch name source arch)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DSOURCE=${source}
                   -DARCH=${arch} "-DFLAGS=${_mf_res_flags}"
                   -DOUT=${_mf_res_dir}/${name}.cubin -DCXXFILT=${MF_CXXFILT}
                   -P ${MF_ROOT}/ci/check_kernel_resources.cmake)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300 ${ARGN})
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

# The fused cross-entropy's bf16 kernels run on tensor cores: their sm_90 PTX
# contains mma.sync, ldmatrix and cp.async (issue 14). The self-test shows the check can fail: the
# label-count kernel has none.
add_test(NAME ptx_mma.cross_entropy_fused
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=${MF_RESOURCE_ARCH} "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu
                 "-DINSTRUCTIONS=mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned|cp.async.cg.shared.global"
                 "-DKERNELS=ce_fused_fwd_mma_kernel|ce_fused_bwd_mma_kernel"
                 -DOUT=${_mf_res_dir}/ptx_mma.cross_entropy_fused.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
add_test(NAME ptx_mma_selftest.count_kernel
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=${MF_RESOURCE_ARCH} "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu -DINSTRUCTIONS=mma.sync
                 -DKERNELS=ce_fused_count_kernel
                 -DOUT=${_mf_res_dir}/ptx_mma_selftest.count_kernel.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
# Its wgmma kernels (sm_90a only; stubs elsewhere): their sm_90a PTX contains wgmma.mma_async (and
# its fence, commit and wait) and cp.async; the sm_90a build of the file meets every budget (no spill,
# no stack frame).
add_test(NAME ptx_wgmma.cross_entropy_fused
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90a "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu
                 "-DINSTRUCTIONS=wgmma.mma_async.sync.aligned.m64n|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned|cp.async.cg.shared.global"
                 "-DKERNELS=ce_fused_fwd_wgmma_kernel|ce_fused_bwd_wgmma_kernel"
                 -DOUT=${_mf_res_dir}/ptx_wgmma.cross_entropy_fused.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma.cross_entropy_fused PROPERTIES LABELS unit TIMEOUT 300)
# The forward's 128 x 256 tiles: m64n256k16.
add_test(NAME ptx_wgmma.cross_entropy_fused_fwd
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90a "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu
                 -DINSTRUCTIONS=wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
                 -DKERNELS=ce_fused_fwd_wgmma_kernel
                 -DOUT=${_mf_res_dir}/ptx_wgmma.cross_entropy_fused_fwd.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma.cross_entropy_fused_fwd PROPERTIES LABELS unit TIMEOUT 300)
# The backward: the recompute's m64n128k16 and the gradient products' m64n64k16 with
# imm-trans-b = 1, once with A K-major (G . W_strip) and once with A MN-major (G^T . hidden):
# the wrapper's immediates "scale-a, scale-b, trans-a, trans-b" after its predicate acc_in
# appear verbatim in the PTX.
add_test(NAME ptx_wgmma.cross_entropy_fused_grad
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90a "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu
                 "-DINSTRUCTIONS=wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16|wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16|acc_in, 1, 1, 0, 1|acc_in, 1, 1, 1, 1"
                 -DKERNELS=ce_fused_bwd_wgmma_kernel
                 -DOUT=${_mf_res_dir}/ptx_wgmma.cross_entropy_fused_grad.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma.cross_entropy_fused_grad PROPERTIES LABELS unit TIMEOUT 300)
# ... and the check can fail: their plain sm_90 PTX (the trapping stubs) has no wgmma.
add_test(NAME ptx_wgmma_selftest.sm_90_stub
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90 "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/cross_entropy_fused.cu -DINSTRUCTIONS=wgmma.mma_async
                 -DKERNELS=ce_fused_fwd_wgmma_kernel
                 -DOUT=${_mf_res_dir}/ptx_wgmma_selftest.sm_90_stub.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma_selftest.sm_90_stub PROPERTIES LABELS unit TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "ce_fused_fwd_wgmma_kernel.*: no 'wgmma.mma_async")
_mf_add_resource_test_arch(kernel_resources.cross_entropy_fused.sm_90a
                           ${MF_ROOT}/optimized/cross_entropy_fused.cu 90a)
# NSA's sm_90a code (its wgmma kernels, issue 15; the other kernels as on sm_90): every kernel in budget.
_mf_add_resource_test_arch(kernel_resources.nsa.sm_90a ${MF_ROOT}/optimized/nsa.cu 90a TIMEOUT 600)
# NSA's selected + sliding forward on wgmma (nsa_wg_fwd_kernel, every <D, WARPS>): S = Q K^T from two
# descriptors (K-major: "acc_in, 1, 1, 0, 0") and O += P V with P from registers and V MN-major
# ("acc_in, 1, 1, 1": imm-trans-b = 1).
add_test(NAME ptx_wgmma.nsa_fwd
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90a "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/nsa.cu
                 "-DINSTRUCTIONS=wgmma.mma_async.sync.aligned.m64n|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned|acc_in, 1, 1, 0, 0|acc_in, 1, 1, 1;|cp.async.cg.shared.global"
                 -DKERNELS=nsa_wg_fwd_kernel
                 -DOUT=${_mf_res_dir}/ptx_wgmma.nsa_fwd.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma.nsa_fwd PROPERTIES LABELS unit TIMEOUT 600)
# nsa_wg_cmp_kernel (the compression branch and importances on wgmma) really is a wgmma kernel:
# S = Q Kc^T as m64n64k16 with both operands from descriptors (K-major: trans 0, 0), P Vc with P
# from registers, fences, groups and the cp.async tile pipeline, in each instantiation (D = 16/32/64);
# pass 1's FlashAttention-3 schedule: S of the next tile waited for alone (wait_group 1) and the
# ping-pong's named barriers (bar.arrive).
add_test(NAME ptx_wgmma.nsa_cmp
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=90a "-DFLAGS=${_mf_res_flags}"
                 -DSOURCE=${MF_ROOT}/optimized/nsa.cu
                 "-DINSTRUCTIONS=wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16|acc_in, 1, 1, 0, 0|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned|wgmma.wait_group.sync.aligned 1|fence.proxy.async|cp.async.cg.shared.global|bar.arrive"
                 -DKERNELS=nsa_wg_cmp_kernel
                 -DOUT=${_mf_res_dir}/ptx_wgmma.nsa_cmp.ptx -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_wgmma.nsa_cmp PROPERTIES LABELS unit TIMEOUT 600)
set_tests_properties(ptx_mma.cross_entropy_fused PROPERTIES LABELS unit TIMEOUT 300)
set_tests_properties(ptx_mma_selftest.count_kernel PROPERTIES LABELS unit TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "ce_fused_count_kernel.*: no 'mma.sync")

# The tensor-core attention kernels really are tensor-core kernels: their sm_90
# PTX contains mma.sync (m16n8k16), ldmatrix and cp.async (issue 13). Plain
# CMake + nvcc -ptx: ci/check_ptx_contains.cmake. The self-test feeds it the
# SIMT kernels of attention.cu, which must fail for lack of mma.sync.
set(_mf_ptx_args -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=${MF_RESOURCE_ARCH} "-DFLAGS=${_mf_res_flags}"
    "-DINSTRUCTIONS=mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned|cp.async.cg.shared.global")
add_test(NAME ptx_contains.attention_mma
         COMMAND ${CMAKE_COMMAND} ${_mf_ptx_args} -DSOURCE=${MF_ROOT}/optimized/attention_mma.cu
                 "-DKERNELS=attn_mma_fwd_kernel|attn_mma_bwd_kernel"
                 -DOUT=${_mf_res_dir}/attention_mma.sm_${MF_RESOURCE_ARCH}.ptx
                 -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
# The NSA bf16 branches (issue 15): the same instructions in nsa_mma_fwd_kernel.
add_test(NAME ptx_contains.nsa_mma
         COMMAND ${CMAKE_COMMAND} ${_mf_ptx_args} -DSOURCE=${MF_ROOT}/optimized/nsa.cu
                 "-DKERNELS=nsa_mma_fwd_kernel|nsa_mma_cmp_kernel|nsa_mma_bwd_kernel|nsa_mma_cmp_bwd_kernel" -DOUT=${_mf_res_dir}/nsa.sm_${MF_RESOURCE_ARCH}.ptx
                 -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_contains.nsa_mma PROPERTIES LABELS unit TIMEOUT 300)
add_test(NAME ptx_contains_selftest.simt_attention
         COMMAND ${CMAKE_COMMAND} ${_mf_ptx_args} -DSOURCE=${MF_ROOT}/optimized/attention.cu
                 -DKERNELS=attn_fwd_kernel -DOUT=${_mf_res_dir}/attention.sm_${MF_RESOURCE_ARCH}.ptx
                 -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
# The causal linear attention's bf16 kernels (issue 13 item 2): mma.sync and ldmatrix
# (they stage through registers, no cp.async).
add_test(NAME ptx_contains.linear_attention_tc
         COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DARCH=${MF_RESOURCE_ARCH} "-DFLAGS=${_mf_res_flags}"
                 "-DINSTRUCTIONS=mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|ldmatrix.sync.aligned"
                 -DSOURCE=${MF_ROOT}/optimized/linear_attention.cu
                 "-DKERNELS=la_tc_state_kernel|la_tc_tile_kernel|la_tc_dkdv_kernel"
                 -DOUT=${_mf_res_dir}/linear_attention.sm_${MF_RESOURCE_ARCH}.ptx
                 -P ${MF_ROOT}/ci/check_ptx_contains.cmake)
set_tests_properties(ptx_contains.linear_attention_tc PROPERTIES LABELS unit TIMEOUT 300)
set_tests_properties(ptx_contains.attention_mma PROPERTIES LABELS unit TIMEOUT 300)
set_tests_properties(ptx_contains_selftest.simt_attention PROPERTIES LABELS unit TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "attn_fwd_kernel.*: no 'mma.sync")
