# memfix verify --dump DIR (tests/verify.cmake): a failing case leaves its
# inputs, expected and got arrays in DIR; a passing case leaves nothing.
file(REMOVE_RECURSE "${DIR}")
execute_process(COMMAND "${MEMFIX}" verify --op matmul --symbol matmul_candidate --backend host --lib "${LIB}"
                        --seed 3 --cases 1 --orders 0 --dump "${DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 (rejected), got ${rc}\n${out}\n${err}")
endif()
foreach(f matmul-g0-input-A.bin matmul-g0-input-B.bin matmul-g0-C.expected.f32 matmul-g0-C.got.f32 matmul-g0-C.txt)
  if(NOT EXISTS "${DIR}/${f}")
    file(GLOB have "${DIR}/*")
    message(FATAL_ERROR "--dump wrote no ${f} (have: ${have})\n${out}")
  endif()
endforeach()
file(GLOB fixed "${DIR}/matmul-f*")
if(fixed)
  message(FATAL_ERROR "passing fixed cases left dumps: ${fixed}")
endif()
file(SIZE "${DIR}/matmul-g0-C.got.f32" got_size)
file(SIZE "${DIR}/matmul-g0-C.expected.f32" ref_size)
if(NOT got_size EQUAL ref_size OR got_size LESS 16404)
  message(FATAL_ERROR "got ${got_size} and expected ${ref_size} bytes: not the whole output")
endif()
