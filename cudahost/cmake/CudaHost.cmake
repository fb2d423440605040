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
include_guard(GLOBAL)

function(cudahost_target_sources target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cudahost_target_sources: no target named '${target}'")
  endif()
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(srcs)
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
      set_source_files_properties("${gen}" PROPERTIES
        GENERATED TRUE
        LANGUAGE CXX
        COMPILE_OPTIONS "-include;cudahost/cudahost.h;-fno-strict-aliasing"  # CUDA code type-puns (uint4 copies)
        COMPILE_DEFINITIONS "__CUDAHOST__=1")
      list(APPEND srcs "${gen}")
    else()
      # Host sources of a host-mode target call cudahost's runtime: force-include the renames (macros only).
      if(abs MATCHES "\\.(c|cc|cpp|cxx|C)$")
        set_property(SOURCE "${abs}" APPEND PROPERTY COMPILE_OPTIONS "-include;cudahost/renames.h")
      endif()
      list(APPEND srcs "${abs}")
    endif()
  endforeach()
  target_sources(${target} PRIVATE ${srcs})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC cudahost::cudahost)
endfunction()

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
