// Canonical CBOR decoding (manifest canonical bytes, checkpoints' manifest,
// traces' CBOR): strict decoding accepts only core deterministic form, so
// whatever it accepts must re-encode to exactly the same bytes.
#include <cstring>
#include <string>

#include "cbor.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  umlos_fuzz::guarded([&] {
    const umlos::cbor::Value v = umlos::cbor::decode(data, size);
    const std::vector<uint8_t> again = umlos::cbor::encode(v);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
      umlos_fuzz::finding("cbor", "decode accepted bytes that do not re-encode to themselves (not canonical)");
    }
    (void)umlos::cbor::diagnostic(v);
  });
  return 0;
}
