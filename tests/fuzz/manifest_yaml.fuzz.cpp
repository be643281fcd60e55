// Manifest YAML (`umlos run|validate|manifest pin MANIFEST`): the whole
// reader, typing and validation of docs/manifest.md, canonical CBOR and
// hashes included. Module files are not opened (allow_unpinned; the pin
// check happens at load).
#include <string>

#include "fuzz_support.hpp"
#include "manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  umlos_fuzz::guarded([&] {
    const umlos::Manifest m = umlos::parse_manifest(text, "fuzz.yaml", umlos_fuzz::scratch(), true);
    for (const std::string& role : umlos::operator_roles()) (void)m.operator_for(role);
  });
  // The standalone typed-YAML reader (IR files, structured config).
  umlos_fuzz::guarded([&] { (void)umlos::parse_yaml_value(text, "fuzz.yaml"); });
  return 0;
}
