# Development switches for memory and undefined-behaviour checking.
#
#   UMLOS_SANITIZE=ON  everything (kernel, `umlos`, modules, tests) is built
#                      with AddressSanitizer + UndefinedBehaviorSanitizer at
#                      -O1. Modules must carry the same instrumentation as the
#                      process that loads them: they are dlopened from sealed
#                      memfds and share its heap.
#   UMLOS_FUZZ=ON      (clang only; implies UMLOS_SANITIZE) also builds the
#                      libFuzzer targets of tests/fuzz (scripts/fuzz.sh runs
#                      them); one such build serves both.
#
# Any UB report aborts (-fno-sanitize-recover): a test run is clean or fails.
# One exception, kept beside its files: cpu_reference's GEMM kernels are
# built without UBSan's pointer-overflow check and without unrolling their
# k loops (modules/lib/cpu_reference/CMakeLists.txt says why); AddressSanitizer
# still covers them. Test harnesses build at -O0 here (tests/CMakeLists.txt).
option(UMLOS_SANITIZE "Build everything with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(UMLOS_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies UMLOS_SANITIZE)" OFF)

if(UMLOS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "UMLOS_FUZZ=ON needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(UMLOS_SANITIZE ON CACHE BOOL "" FORCE)
endif()

if(UMLOS_SANITIZE)
  set(_umlos_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
                 -fno-omit-frame-pointer)
  add_compile_options(${_umlos_san} -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
# UMLOS_FUZZ: libFuzzer's coverage instrumentation goes only on the parsers'
# libraries (kernel, policy) and the targets (tests/fuzz/CMakeLists.txt), not
# on modules and tests: the same build runs the test suite nearly as fast.
