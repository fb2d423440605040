# CudaHostProbes.cmake: known host-compiler miscompiles, probed where host mode is configured.
#
#   cudahost_apply_compiler_probes()   # in the top directory, before the targets are declared
#
# Host mode is only as right as the host compiler: a compiler that silently computes something other than a kernel's
# source makes a green suite meaningless. Each cudahost/probes/<name>.c is a small program for one known miscompile
# (its comment names the compiler, the pattern and a `workaround:` flag); it exits 0 when the compiler computes what
# the source says. For the C and C++ compilers, each probe is built at -O2 and run; where it fails, it is built
# again with its workaround flag, and where that passes the flag is added to every C, C++ and (GNU host compiler)
# CUDA host-side compile of the calling directory and below, and a message says so once. cudahost-c++ does the same
# for the compiler it runs (`cudahost-c++ --self-test`). Results are cached per compiler (CUDAHOST_PROBE_FLAGS_*).
# How to add a probe: cudahost/README.md, "Host-compiler probes".
include_guard(GLOBAL)
set(CUDAHOST_PROBE_DIR ${CMAKE_CURRENT_LIST_DIR}/../probes)

# The workaround flags the compiler of `lang` (C or CXX) needs, as a list, into `out`.
function(cudahost_probe_flags lang out)
  string(MD5 key "${CMAKE_${lang}_COMPILER};${CMAKE_${lang}_COMPILER_VERSION};${CMAKE_${lang}_FLAGS}")
  set(cachevar CUDAHOST_PROBE_FLAGS_${lang}_${key})
  if(DEFINED CACHE{${cachevar}})
    set(${out} "${${cachevar}}" PARENT_SCOPE)
    return()
  endif()
  file(GLOB probes ${CUDAHOST_PROBE_DIR}/*.c)
  set(ext c)
  if(lang STREQUAL "CXX")
    set(ext cpp)
  endif()
  set(flags)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/cudahost_probes)
  foreach(p IN LISTS probes)
    get_filename_component(name ${p} NAME_WE)
    file(STRINGS ${p} wline REGEX "workaround: ")
    string(REGEX REPLACE ".*workaround: *" "" flag "${wline}")
    configure_file(${p} ${dir}/${name}.${ext} COPYONLY)
    try_run(rc built ${dir}/${name}_${lang} ${dir}/${name}.${ext} COMPILE_DEFINITIONS -O2
      RUN_OUTPUT_VARIABLE said)
    if(built AND rc EQUAL 0)
      continue()
    endif()
    string(REGEX REPLACE "\n.*" "" said "${said}")  # the first case it printed
    try_run(rc2 built2 ${dir}/${name}_${lang}_fixed ${dir}/${name}.${ext} COMPILE_DEFINITIONS -O2 ${flag})
    if(built2 AND rc2 EQUAL 0)
      message(STATUS "cudahost: ${CMAKE_${lang}_COMPILER_ID} ${CMAKE_${lang}_COMPILER_VERSION} (${lang}) "
                     "miscompiles probe ${name} at -O2 (${said}); adding ${flag} to every ${lang} compile")
      list(APPEND flags ${flag})
    else()
      message(WARNING "cudahost: ${CMAKE_${lang}_COMPILER} miscompiles probe ${name} (cudahost/probes/${name}.c) "
                      "even with ${flag}: host mode may compute something other than the source says. "
                      "Use another compiler (CMAKE_CXX_COMPILER, CMAKE_C_COMPILER).")
    endif()
  endforeach()
  set(${cachevar} "${flags}" CACHE INTERNAL "cudahost: workaround flags for ${CMAKE_${lang}_COMPILER}")
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# Probes the C and C++ compilers and adds the workarounds they need to the calling directory's compile options;
# CUDAHOST_PROBE_FLAGS_CXX (the C++ compiler's, for cudahost-c++) is set in the caller's scope.
macro(cudahost_apply_compiler_probes)
  cudahost_probe_flags(CXX CUDAHOST_PROBE_FLAGS_CXX)
  foreach(cudahost_f_ IN LISTS CUDAHOST_PROBE_FLAGS_CXX)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${cudahost_f_}>)
    # nvcc's host compiler is the same GNU compiler unless CMAKE_CUDA_HOST_COMPILER names another
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_CUDA_HOST_COMPILER)
      add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${cudahost_f_}>)
    endif()
  endforeach()
  get_property(cudahost_langs_ GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST cudahost_langs_)
    cudahost_probe_flags(C cudahost_c_flags_)
    foreach(cudahost_f_ IN LISTS cudahost_c_flags_)
      add_compile_options($<$<COMPILE_LANGUAGE:C>:${cudahost_f_}>)
    endforeach()
  endif()
endmacro()
