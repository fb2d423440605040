# PTX content check: compiles ONE .cu file to PTX for one architecture and
# requires every kernel (.entry) whose mangled name matches ENTRY to contain the
# instruction text INSTR. Runs with plain CMake:
#
#   cmake -DNVCC=/usr/local/cuda/bin/nvcc -DSOURCE=optimized/cross_entropy_fused.cu \
#         -DENTRY="ce_fused_(fwd|bwd)_kernelI13__nv_bfloat16" -DINSTR=mma.sync \
#         [-DARCH=90] [-DFLAGS="-Iinclude|-DMF_HAVE_CUDA=1|-std=c++17"] [-DOUT=/tmp/x.ptx] \
#         -P ci/check_ptx_contains.cmake
#
# Fails when no entry matches ENTRY (a renamed kernel must not pass silently).
cmake_minimum_required(VERSION 3.25)
foreach(var NVCC SOURCE ENTRY INSTR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_ptx_contains: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED ARCH OR ARCH STREQUAL "")
  set(ARCH 90)
endif()
if(NOT DEFINED OUT OR OUT STREQUAL "")
  get_filename_component(_stem "${SOURCE}" NAME_WE)
  set(OUT "${CMAKE_CURRENT_BINARY_DIR}/${_stem}.sm_${ARCH}.ptx")
endif()
string(REPLACE "|" ";" _flags "${FLAGS}")
execute_process(COMMAND "${NVCC}" -ptx -arch=sm_${ARCH} ${_flags} "${SOURCE}" -o "${OUT}"
                RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "check_ptx_contains: nvcc failed (${_rc}):\n${_out}${_err}")
endif()
file(READ "${OUT}" _ptx)
# One chunk per kernel: the text from one '.entry' to the next.
# PTX ends every instruction with ';', CMake's list separator: mask it first.
string(REPLACE ";" "<sc>" _ptx "${_ptx}")
string(REPLACE "[" "(" _ptx "${_ptx}")
string(REPLACE "]" ")" _ptx "${_ptx}")
string(REPLACE "\\" "/" _ptx "${_ptx}")
string(REPLACE ".entry " ";.entry " _ptx "${_ptx}")
set(_matched 0)
set(_missing "")
foreach(_chunk IN LISTS _ptx)
  if(NOT _chunk MATCHES "^\\.entry ([A-Za-z0-9_]+)")
    continue()
  endif()
  set(_name "${CMAKE_MATCH_1}")
  if(NOT _name MATCHES "${ENTRY}")
    continue()
  endif()
  math(EXPR _matched "${_matched} + 1")
  string(FIND "${_chunk}" "${INSTR}" _pos)
  if(_pos EQUAL -1)
    list(APPEND _missing "${_name}")
  else()
    message(STATUS "${_name}: contains ${INSTR}")
  endif()
endforeach()
if(_matched EQUAL 0)
  message(FATAL_ERROR "check_ptx_contains: no kernel of ${SOURCE} matches '${ENTRY}'")
endif()
if(_missing)
  message(FATAL_ERROR "check_ptx_contains: sm_${ARCH} PTX of ${_missing} has no '${INSTR}'")
endif()
message(STATUS "check_ptx_contains: ${_matched} kernel(s) of ${SOURCE} contain ${INSTR} (sm_${ARCH})")
