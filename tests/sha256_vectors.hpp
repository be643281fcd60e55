// sha256_vectors.hpp — the example vectors of FIPS 180-2 (Appendix B) and
// the one-million-'a' vector, shared by the tests of the kernel's SHA-256
// (kernel/runtime/sha256.cpp) and the SDK's (sdk/include/umlos/sha256.hpp),
// so both answer to the same list.
#pragma once

#include <string>

namespace umlos_test {

struct Sha256Vector {
  std::string message;
  const char* digest;
};

inline const Sha256Vector kFips180_2[] = {
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
     "pqrsmnopqrstnopqrstu",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
};

}  // namespace umlos_test
