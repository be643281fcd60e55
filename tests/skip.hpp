// skip.hpp — UMLOS_SKIP(reason): a test that cannot run on this machine (no
// GPU, no CUDA toolkit, not root, a tool missing) says so and returns.
// Catch2 v2 has no SKIP, so the marker line is what tells CTest: every test
// is registered with SKIP_REGULAR_EXPRESSION on it (tests/CMakeLists.txt),
// and ctest reports the test as "Skipped", never "Passed". Run by hand, the
// binary prints the marker as a warning and goes on with the next test.
#pragma once

#include <catch2/catch.hpp>

#define UMLOS_SKIP_MARKER "UMLOS_TEST_SKIPPED: "

// Returns from the enclosing function (void): call it before any check.
#define UMLOS_SKIP(reason)             \
  do {                                 \
    WARN(UMLOS_SKIP_MARKER << reason); \
    return;                            \
  } while (0)

// UMLOS_TEST_ASAN: the tests run under AddressSanitizer (gcc defines
// __SANITIZE_ADDRESS__, clang answers __has_feature). There a throwing
// operator new reports "out of memory" and aborts instead of throwing
// std::bad_alloc, and an address-space limit (ulimit -v) breaks the shadow
// memory reservation: the tests of those two behaviours skip or adapt.
#if defined(__SANITIZE_ADDRESS__)
#define UMLOS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UMLOS_TEST_ASAN 1
#endif
#endif
