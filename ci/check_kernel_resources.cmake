# Kernel resource budgets: compiles ONE .cu file for one architecture with
# ptxas verbose output and checks every kernel against the budget stated beside
# it in the source, or in a file the source includes with quotes from its own
# folder or below (an op split into role files, optimized/<op>/*.cuh). Runs with plain
# CMake (no Python):
#
#   cmake -DNVCC=/usr/local/cuda/bin/nvcc -DSOURCE=optimized/attention.cu \
#         [-DARCH=90] [-DFLAGS="-Iinclude|-DMF_HAVE_CUDA=1|-std=c++17"] \
#         [-DOUT=/tmp/attention.cubin] [-DCXXFILT=/usr/bin/c++filt] [-DKEEP_DIR=/tmp/keep] \
#         -P ci/check_kernel_resources.cmake
#
# KEEP_DIR: nvcc -keep's directory; the PTX the compile made stays there as <stem>.ptx, which
# ci/check_ptx_contains.cmake can check (-DPTX=...) without compiling the file again.
#
# Or check a compile that already ran: -DPTXAS_LOG=<file> (no NVCC needed), ptxas' -v report of a
# compile for one or several architectures, as the library build records it
# (cmake/nvcc_resource_log.sh). Only the entries compiled for sm_${ARCH} are checked.
#
# FLAGS is a '|'-separated list of extra nvcc arguments (include directories,
# definitions, language standard), normally the library's own CUDA flags
# (tests/resources.cmake passes them from the memfix_cuda target).
#
# Budget comment, on a line of its own, directly above the kernel (above its
# `template <...>` line, if any; other comment lines may sit in between):
#
#   // mf-budget: regs<=72 smem<=26624 [stack<=128] spill=0  (optional note)
#   template <typename T>
#   __global__ void __launch_bounds__(kThreads) attn_fwd_kernel(...)
#
#   regs   registers per thread (ptxas "Used N registers")
#   smem   bytes of STATIC shared memory (ptxas "N bytes smem"); dynamic shared
#          memory is sized at launch and is not seen by ptxas
#   stack  bytes of stack frame (local arrays); 0 when not stated
#   spill  must be 0: any spill store or load fails, in any function
#
# The numbers are stated for the architecture the budgets were measured on
# (MF_RESOURCE_ARCH, sm_90). Where another checked architecture needs more, an
# override names it, and applies only there (a note should say why):
#
#   // mf-budget: regs<=96 smem<=37888 spill=0 sm_80:regs<=128  (sm_80: ...)
#
#   sm_XX:regs<=N, sm_XX:smem<=N, sm_XX:stack<=N  (XX as passed in ARCH: 80, 90a)
#
# spill=0 holds on every architecture.
#
# Every instantiation of a template kernel is checked against the same budget.
# Failures: a kernel over a budget, any spill, a compiled kernel with no budget,
# a budget that names no compiled kernel, a malformed budget comment.
cmake_minimum_required(VERSION 3.25)

set(_need SOURCE)
if(NOT DEFINED PTXAS_LOG OR PTXAS_LOG STREQUAL "")
  set(PTXAS_LOG "")
  list(APPEND _need NVCC)
endif()
foreach(var IN LISTS _need)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_kernel_resources: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED ARCH OR ARCH STREQUAL "")
  set(ARCH 90)
endif()
if(NOT DEFINED OUT OR OUT STREQUAL "")
  get_filename_component(_stem "${SOURCE}" NAME_WE)
  set(OUT "${CMAKE_CURRENT_BINARY_DIR}/${_stem}.sm_${ARCH}.cubin")
endif()
string(REPLACE "|" ";" _flags "${FLAGS}")
get_filename_component(_src_name "${SOURCE}" NAME)

set(_errors "")
# Readable kernel name: demangled with c++filt when given, parameter list dropped.
function(_demangle name outvar)
  set(_r "${name}")
  if(CXXFILT)
    execute_process(COMMAND "${CXXFILT}" "${name}" OUTPUT_VARIABLE _d RESULT_VARIABLE _drc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_drc EQUAL 0 AND NOT _d STREQUAL "")
      string(REGEX REPLACE "\\(.*$" "" _r "${_d}")
      string(REGEX REPLACE "^void " "" _r "${_r}")
    endif()
  endif()
  set(${outvar} "${_r}" PARENT_SCOPE)
endfunction()
macro(_fail msg)
  string(APPEND _errors "  ${msg}\n")
endmacro()

# ---- 1. budgets from the source and the files it includes from its folder ------------
# A file SOURCE includes with quotes ("x.cuh", "op/role.cuh") that lies in SOURCE's folder or
# below is read too, and so are its own such includes: an op split into role files under
# optimized/<op>/ states each kernel's budget beside it there. A file is read once.
get_filename_component(_src_abs "${SOURCE}" ABSOLUTE)
get_filename_component(_src_dir "${_src_abs}" DIRECTORY)
set(_scan "${_src_abs}")
set(_scanned "")
set(_budget_names "")
while(_scan)
  list(POP_FRONT _scan _file)
  if(_file IN_LIST _scanned)
    continue()
  endif()
  list(APPEND _scanned "${_file}")
  file(RELATIVE_PATH _file_name "${_src_dir}" "${_file}")
  file(READ "${_file}" _text)
  string(REPLACE ";" " " _text "${_text}")     # keep CMake list handling out of the way
  string(REPLACE "\\" " " _text "${_text}")
  get_filename_component(_file_dir "${_file}" DIRECTORY)
  string(REGEX MATCHALL "#[ \t]*include[ \t]*\"[^\"\n]+\"" _incs "${_text}")
  foreach(_inc IN LISTS _incs)
    string(REGEX REPLACE "^#[ \t]*include[ \t]*\"([^\"]+)\"$" "\\1" _inc "${_inc}")
    get_filename_component(_inc "${_inc}" ABSOLUTE BASE_DIR "${_file_dir}")
    cmake_path(IS_PREFIX _src_dir "${_inc}" NORMALIZE _inside)
    if(_inside AND EXISTS "${_inc}" AND NOT IS_DIRECTORY "${_inc}")
      list(APPEND _scan "${_inc}")
    endif()
  endforeach()
  set(_pos 0)
  string(LENGTH "${_text}" _len)
  while(TRUE)
    string(SUBSTRING "${_text}" ${_pos} -1 _rest)
    string(FIND "${_rest}" "mf-budget:" _at)
    if(_at EQUAL -1)
      break()
    endif()
    math(EXPR _pos "${_pos} + ${_at} + 10")
    string(SUBSTRING "${_text}" ${_pos} -1 _rest)
    string(FIND "${_rest}" "\n" _eol)
    if(_eol EQUAL -1)
      set(_spec "${_rest}")
      set(_after "")
    else()
      string(SUBSTRING "${_rest}" 0 ${_eol} _spec)
      math(EXPR _next "${_eol} + 1")
      string(SUBSTRING "${_rest}" ${_next} 800 _after)
    endif()
    string(REGEX REPLACE "\\(.*$" "" _spec "${_spec}")   # a trailing (note) is free text
    string(STRIP "${_spec}" _spec)
    # The declaration that follows: drop line comments and __launch_bounds__(...),
    # join lines, then take the identifier before the parameter list.
    string(REGEX REPLACE "//[^\n]*" "" _after "${_after}")
    string(REGEX REPLACE "__launch_bounds__[ \t\n]*\\([^)]*\\)" " " _after "${_after}")
    string(REGEX REPLACE "[\t\n\r]" " " _after "${_after}")
    if(NOT _after MATCHES "^ *(template *<[^>]*> *)?(static +)?(extern +\"C\" +)?__global__[^(]*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*) *\\(")
      _fail("${_file_name}: 'mf-budget: ${_spec}' is not directly above a __global__ kernel")
      continue()
    endif()
    set(_k "${CMAKE_MATCH_4}")
    if(_k IN_LIST _budget_names)
      _fail("${_file_name}: kernel '${_k}' has two mf-budget comments")
      continue()
    endif()
    set(_ok TRUE)
    foreach(field regs smem)
      if(_spec MATCHES "(^| )${field}<=([0-9]+)( |$)")
        set(_budget_${field}_${_k} "${CMAKE_MATCH_2}")
      else()
        _fail("${_file_name}: kernel '${_k}': budget '${_spec}' lacks ${field}<=N")
        set(_ok FALSE)
      endif()
    endforeach()
    if(_spec MATCHES "(^| )stack<=([0-9]+)( |$)")
      set(_budget_stack_${_k} "${CMAKE_MATCH_2}")
    else()
      set(_budget_stack_${_k} 0)
    endif()
    # This architecture's overrides (sm_${ARCH}:field<=N), shown in the report and the
    # failure message under their own name.
    foreach(field regs smem stack)
      set(_budget_${field}_name_${_k} "${field}")
      if(_spec MATCHES "(^| )sm_${ARCH}:${field}<=([0-9]+)( |$)")
        set(_budget_${field}_${_k} "${CMAKE_MATCH_2}")
        set(_budget_${field}_name_${_k} "sm_${ARCH}:${field}")
      endif()
    endforeach()
    if(NOT _spec MATCHES "(^| )spill=0( |$)")
      _fail("${_file_name}: kernel '${_k}': budget '${_spec}' must state spill=0 (spills are never allowed)")
      set(_ok FALSE)
    endif()
    string(REGEX REPLACE "(^| )(sm_[0-9]+a?:)?(regs|smem|stack)<=[0-9]+" "" _unknown "${_spec}")
    string(REGEX REPLACE "(^| )spill=0" "" _unknown "${_unknown}")
    string(STRIP "${_unknown}" _unknown)
    if(NOT _unknown STREQUAL "")
      _fail("${_file_name}: kernel '${_k}': unknown budget field(s) '${_unknown}' (regs<=N smem<=N [stack<=N] spill=0 [sm_XX:regs<=N ...])")
      set(_ok FALSE)
    endif()
    if(_ok)
      list(APPEND _budget_names "${_k}")
      set(_budget_hits_${_k} 0)
      set(_budget_file_${_k} "${_file_name}")
    endif()
  endwhile()
endwhile()

# ---- 2. compile with ptxas -v, or read the build's report -----------------------------
if(PTXAS_LOG)
  if(NOT EXISTS "${PTXAS_LOG}")
    message(FATAL_ERROR "check_kernel_resources: no ptxas report ${PTXAS_LOG}: the library build writes it "
                        "(build before testing)")
  endif()
  file(READ "${PTXAS_LOG}" _out)
else()
get_filename_component(_out_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_out_dir}")
set(_keep "")
if(DEFINED KEEP_DIR AND NOT KEEP_DIR STREQUAL "")
  file(REMOVE_RECURSE "${KEEP_DIR}")
  file(MAKE_DIRECTORY "${KEEP_DIR}")
  set(_keep -keep -keep-dir "${KEEP_DIR}")
endif()
execute_process(
  COMMAND "${NVCC}" ${_flags} -arch=sm_${ARCH} -cubin -Xptxas -v ${_keep} -o "${OUT}" "${SOURCE}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message("${_out}")
  message(FATAL_ERROR "check_kernel_resources: nvcc failed on ${SOURCE} (exit ${_rc})")
endif()
endif()

# ---- 3. parse ptxas output -------------------------------------------------------------
# ptxas reports each architecture in turn ("0 bytes gmem", then its functions); an entry's lines
# follow "Compiling entry function '<name>' for 'sm_XX'". Entries of other architectures are skipped;
# a spill is reported for sm_${ARCH} and for a function whose architecture the report leaves open.
string(REPLACE ";" " " _out "${_out}")
string(REPLACE "\n" ";" _lines "${_out}")
set(_entries "")
set(_entry "")
set(_props "")
set(_cur_arch "")
foreach(line IN LISTS _lines)
  if(line MATCHES "bytes gmem")
    set(_cur_arch "")
  elseif(line MATCHES "Compiling entry function '([^']+)' for 'sm_([0-9]+a?)'")
    set(_cur_arch "${CMAKE_MATCH_2}")
    if(_cur_arch STREQUAL ARCH)
      set(_entry "${CMAKE_MATCH_1}")
      list(APPEND _entries "${_entry}")
      set(_regs_${_entry} 0)
      set(_smem_${_entry} 0)
    else()
      set(_entry "")
    endif()
  elseif(line MATCHES "Function properties for ([^ ]+)")
    set(_props "${CMAKE_MATCH_1}")
  elseif(line MATCHES "([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
    if(NOT _cur_arch STREQUAL "" AND NOT _cur_arch STREQUAL ARCH)
      continue()
    endif()
    set(_stack_${_props} "${CMAKE_MATCH_1}")
    if(NOT CMAKE_MATCH_2 EQUAL 0 OR NOT CMAKE_MATCH_3 EQUAL 0)
      set(_st "${CMAKE_MATCH_2}")
      set(_ld "${CMAKE_MATCH_3}")
      _demangle("${_props}" _pd)
      _fail("${_pd}: spills registers (${_st} bytes spill stores, ${_ld} bytes spill loads)")
    endif()
  elseif(line MATCHES "Used ([0-9]+) registers" AND NOT _entry STREQUAL "")
    set(_regs_${_entry} "${CMAKE_MATCH_1}")
    if(line MATCHES "([0-9]+) bytes smem")
      set(_smem_${_entry} "${CMAKE_MATCH_1}")
    endif()
  endif()
endforeach()
if(NOT _entries)
  if(PTXAS_LOG)
    _fail("${_src_name}: ${PTXAS_LOG} reports no kernels compiled for sm_${ARCH}")
  else()
    _fail("${_src_name}: ptxas reported no kernels (is this a .cu file with __global__ functions?)")
  endif()
endif()

# ---- 4. check each kernel against its budget ------------------------------------------
set(_report "")
foreach(e IN LISTS _entries)
  _demangle("${e}" _display)
  # Match the budget by name: extern "C" names are as written; C++ names are
  # mangled as <length><name> (e.g. _ZN7mf_cuda15attn_fwd_kernelIfEEv...).
  set(_match "")
  foreach(k IN LISTS _budget_names)
    string(LENGTH "${k}" _kl)
    if(e STREQUAL k OR e MATCHES "[^0-9]${_kl}${k}")
      string(LENGTH "${_match}" _ml)
      if(_kl GREATER _ml)
        set(_match "${k}")
      endif()
    endif()
  endforeach()
  if(DEFINED _stack_${e})
    set(_stack "${_stack_${e}}")
  else()
    set(_stack 0)
  endif()
  if(_match STREQUAL "")
    _fail("${_display}: no mf-budget stated beside this kernel in ${_src_name} (measured: regs ${_regs_${e}}, smem ${_smem_${e}}, stack ${_stack})")
    string(APPEND _report "  ${_display}: regs ${_regs_${e}}  smem ${_smem_${e}}  stack ${_stack}  (NO BUDGET)\n")
    continue()
  endif()
  math(EXPR _budget_hits_${_match} "${_budget_hits_${_match}} + 1")
  set(_rb "${_budget_regs_${_match}}")
  set(_sb "${_budget_smem_${_match}}")
  set(_kb "${_budget_stack_${_match}}")
  string(APPEND _report "  ${_display}: regs ${_regs_${e}}/${_rb}  smem ${_smem_${e}}/${_sb}  stack ${_stack}/${_kb}\n")
  if(_regs_${e} GREATER _rb)
    _fail("${_display}: uses ${_regs_${e}} registers, exceeds its register budget ${_budget_regs_name_${_match}}<=${_rb}")
  endif()
  if(_smem_${e} GREATER _sb)
    _fail("${_display}: uses ${_smem_${e}} bytes of static shared memory, exceeds its shared-memory budget ${_budget_smem_name_${_match}}<=${_sb}")
  endif()
  if(_stack GREATER _kb)
    _fail("${_display}: has a ${_stack}-byte stack frame, exceeds its stack budget ${_budget_stack_name_${_match}}<=${_kb}")
  endif()
endforeach()
foreach(k IN LISTS _budget_names)
  if(_budget_hits_${k} EQUAL 0)
    _fail("${_budget_file_${k}}: the mf-budget for '${k}' matches no compiled kernel (renamed or never instantiated?)")
  endif()
endforeach()

message("${_src_name} (sm_${ARCH}): used/budget per kernel\n${_report}")
if(NOT _errors STREQUAL "")
  message(FATAL_ERROR "kernel resource budget check FAILED for ${SOURCE}:\n${_errors}")
endif()
message("kernel resource budgets OK: ${_src_name}")
