// gzip input (dataset `.gz` imports, `.json.gz` plan inputs): the kernel's
// gunzip, whose output must stay bounded whatever the stream claims.
#include <string>
#include <vector>

#include "fsutil.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  umlos_fuzz::guarded([&] { (void)umlos::gunzip(bytes, "fuzz.gz"); });
  return 0;
}
