# CudaHost.cmake: CMake functions that build host-execution-mode targets from CUDA sources.
#
#   cudahost_add_library(<name> [STATIC|SHARED|OBJECT] <sources...>)
#   cudahost_add_executable(<name> <sources...>)
#   cudahost_target_sources(<target> <sources...>)   # add host-mode .cu sources to an existing target
#
# Each .cu source is rewritten at build time by cudahost-rewrite into
# ${CMAKE_CURRENT_BINARY_DIR}/cudahost_gen/<path>.cpp (line-preserving, with #line pointing at the original .cu,
# so diagnostics, sanitizer reports, gdb and gcov show the .cu lines), then compiled as C++20 with
# -include cudahost/cudahost.h and -D__CUDAHOST__; the target links cudahost::cudahost (OpenBLAS, Threads).
# Other C/C++ sources are compiled normally, with -include cudahost/renames.h (the renaming macros only) so that
# their CUDA runtime and cuBLAS calls reach cudahost. Quoted #includes of .cuh/.cu files are rewritten too (recursively).
#
# cudahost/cudahost.h is most of the compile time of a small .cu (about 1.6 of 1.9 s with GCC at -O2): with
# CUDAHOST_PCH (default ON) it is precompiled once per build, by the target cudahost_pch, and every rewritten
# source includes the precompiled header instead (REUSE_FROM). The precompiled header is built with the flags the
# rewritten sources get (the directory's options, C++20, -D__CUDAHOST__=1, -fno-strict-aliasing, the warning
# flags); for a source whose flags make it unusable the compiler says so (-Winvalid-pch, an error with -Werror)
# and parses the header instead.
include_guard(GLOBAL)
option(CUDAHOST_PCH "Precompile cudahost/cudahost.h once for all host-mode .cu sources" ON)

function(cudahost_target_sources target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cudahost_target_sources: no target named '${target}'")
  endif()
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(srcs)
  set(has_cu OFF)
  foreach(src IN LISTS ARGN)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(abs MATCHES "\\.cu$")
      file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${abs}")
      string(REPLACE "../" "__/" rel "${rel}")
      string(REPLACE ":" "_" rel "${rel}")
      set(gen "${CMAKE_CURRENT_BINARY_DIR}/cudahost_gen/${target}/${rel}.cpp")
      add_custom_command(OUTPUT "${gen}"
        COMMAND cudahost-rewrite "$<$<BOOL:${incs}>:-I$<JOIN:${incs},;-I>>" --depfile "${gen}.d" "${abs}" "${gen}"
        DEPENDS "${abs}" cudahost-rewrite
        DEPFILE "${gen}.d"
        COMMENT "cudahost: rewriting ${rel}"
        COMMAND_EXPAND_LISTS VERBATIM)
      # CUDA code type-puns (uint4 copies): -fno-strict-aliasing. cudahost.h comes first, precompiled or not.
      if(CUDAHOST_PCH)
        set(opts "-fno-strict-aliasing")
      else()
        set(opts "-include;cudahost/cudahost.h;-fno-strict-aliasing")
      endif()
      set_source_files_properties("${gen}" PROPERTIES
        GENERATED TRUE
        LANGUAGE CXX
        COMPILE_OPTIONS "${opts}"
        COMPILE_DEFINITIONS "__CUDAHOST__=1")
      list(APPEND srcs "${gen}")
      set(has_cu ON)
    else()
      # Host sources of a host-mode target call cudahost's runtime: force-include the renames (macros only).
      if(abs MATCHES "\\.(c|cc|cpp|cxx|C)$")
        set_property(SOURCE "${abs}" APPEND PROPERTY COMPILE_OPTIONS "-include;cudahost/renames.h")
      endif()
      set_source_files_properties("${abs}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      list(APPEND srcs "${abs}")
    endif()
  endforeach()
  target_sources(${target} PRIVATE ${srcs})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC cudahost::cudahost)
  get_target_property(reuses ${target} PRECOMPILE_HEADERS_REUSE_FROM)
  if(CUDAHOST_PCH AND has_cu AND NOT reuses)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${target} REUSE_FROM cudahost_pch_exe)
    else()
      target_precompile_headers(${target} REUSE_FROM cudahost_pch)
    endif()
  endif()
endfunction()

# The precompiled cudahost.h (see above): object libraries of one empty source, compiled as the rewritten
# sources are; two, since position-independent code for a library (-fPIC) and for an executable (-fPIE) are
# different settings to a precompiled header: cudahost_pch for libraries, cudahost_pch_exe for executables.
if(CUDAHOST_PCH AND NOT TARGET cudahost_pch)
  set(_cudahost_pch_src "${CMAKE_CURRENT_BINARY_DIR}/cudahost_pch.cpp")
  file(CONFIGURE OUTPUT "${_cudahost_pch_src}" CONTENT "// cudahost.h precompiled (CudaHost.cmake)\n")
  foreach(_t cudahost_pch cudahost_pch_exe)
    add_library(${_t} OBJECT "${_cudahost_pch_src}")
    target_compile_features(${_t} PUBLIC cxx_std_20)
    target_link_libraries(${_t} PUBLIC cudahost::cudahost)
    target_compile_definitions(${_t} PRIVATE __CUDAHOST__=1)
    target_compile_options(${_t} PRIVATE -fno-strict-aliasing ${MF_WARN_FLAGS})
    target_precompile_headers(${_t} PRIVATE <cudahost/cudahost.h>)
  endforeach()
  # an executable's objects: -fPIE where position-independent code is on (CMake's flag for executables)
  set_target_properties(cudahost_pch_exe PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  if(CMAKE_POSITION_INDEPENDENT_CODE)
    target_compile_options(cudahost_pch_exe PRIVATE -fPIE)
  endif()
endif()

function(cudahost_add_library name)
  set(type "")
  set(srcs ${ARGN})
  list(LENGTH srcs n)
  if(n GREATER 0)
    list(GET srcs 0 first)
    if(first MATCHES "^(STATIC|SHARED|OBJECT|MODULE)$")
      set(type ${first})
      list(REMOVE_AT srcs 0)
    endif()
  endif()
  add_library(${name} ${type})
  cudahost_target_sources(${name} ${srcs})
endfunction()

function(cudahost_add_executable name)
  add_executable(${name})
  cudahost_target_sources(${name} ${ARGN})
endfunction()
