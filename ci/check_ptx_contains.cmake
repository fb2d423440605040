# PTX content check: compiles ONE .cu file to PTX for one architecture and
# requires that the PTX of each named kernel contains each given instruction.
# Plain CMake (no cuobjdump needed: the toolkit's nvcc alone):
#
#   cmake -DNVCC=/usr/local/cuda/bin/nvcc -DSOURCE=optimized/attention_mma.cu \
#         [-DARCH=90] [-DFLAGS="-Iinclude|-Isrc/core|-std=c++17"] [-DOUT=/tmp/x.ptx] \
#         -DKERNELS="attn_mma_fwd_kernel|attn_mma_bwd_kernel" \
#         -DINSTRUCTIONS="mma.sync.aligned.m16n8k16|ldmatrix.sync.aligned|cp.async.cg.shared.global" \
#         -P ci/check_ptx_contains.cmake
#
# Or check PTX that is already there (no nvcc needed): -DPTX=<file> instead of -DNVCC, e.g. the
# PTX a kernel_resources test kept (ci/check_kernel_resources.cmake -DKEEP_DIR=...; tests/resources.cmake
# makes that test a fixture of the PTX checks, so each file is compiled once per architecture).
#
# KERNELS are substrings of the (mangled) .entry names; every entry that matches
# one must contain every instruction, and every KERNELS item must match at least
# one entry (so a renamed kernel fails the check instead of passing it vacuously).
cmake_minimum_required(VERSION 3.25)
set(_have_ptx FALSE)
if(DEFINED PTX AND NOT PTX STREQUAL "")
  set(_have_ptx TRUE)
endif()
set(_need SOURCE KERNELS INSTRUCTIONS)
if(NOT _have_ptx)
  list(APPEND _need NVCC)
endif()
foreach(var IN LISTS _need)
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
string(REPLACE "|" ";" _kernels "${KERNELS}")
string(REPLACE "|" ";" _instrs "${INSTRUCTIONS}")

if(_have_ptx)
  if(NOT EXISTS "${PTX}")
    message(FATAL_ERROR "check_ptx_contains: ${PTX} does not exist (it is the PTX of ${SOURCE} that a "
                        "kernel_resources test keeps; run that test first)")
  endif()
  set(OUT "${PTX}")
else()
  execute_process(
    COMMAND "${NVCC}" ${_flags} -arch=sm_${ARCH} -ptx -o "${OUT}" "${SOURCE}"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "check_ptx_contains: nvcc -ptx failed on ${SOURCE} (exit ${_rc})")
  endif()
endif()
file(READ "${OUT}" _ptx)
string(REPLACE ";" " " _ptx "${_ptx}")
if(NOT _ptx MATCHES "\\.target sm_${ARCH}")
  message(FATAL_ERROR "check_ptx_contains: ${OUT} is not PTX for sm_${ARCH}")
endif()

# Split at each ".entry": chunk i (i >= 1) is the entry's name and body.
string(REPLACE ".entry " ";" _chunks "${_ptx}")
list(REMOVE_AT _chunks 0)
set(_errors "")
foreach(k IN LISTS _kernels)
  set(_seen 0)
  foreach(chunk IN LISTS _chunks)
    string(REGEX MATCH "^[A-Za-z0-9_$]+" _name "${chunk}")
    string(FIND "${_name}" "${k}" _at)
    if(_at EQUAL -1)
      continue()
    endif()
    math(EXPR _seen "${_seen} + 1")
    foreach(ins IN LISTS _instrs)
      string(FIND "${chunk}" "${ins}" _i)
      if(_i EQUAL -1)
        string(APPEND _errors "  ${_name}: no '${ins}' in its sm_${ARCH} PTX\n")
      endif()
    endforeach()
  endforeach()
  if(_seen EQUAL 0)
    string(APPEND _errors "  no kernel named like '${k}' in the PTX of ${SOURCE}\n")
  endif()
endforeach()
if(NOT _errors STREQUAL "")
  message(FATAL_ERROR "check_ptx_contains: ${SOURCE}:\n${_errors}")
endif()
message(STATUS "check_ptx_contains: every ${KERNELS} entry of ${SOURCE} contains ${INSTRUCTIONS} (sm_${ARCH})")
