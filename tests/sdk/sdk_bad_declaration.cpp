// A module whose declaration is wrong ("exactly 0 draws from stream misc"):
// the SDK must refuse it inside umlos_module_entry, and the kernel must
// report MODULE_DESCRIPTOR_INVALID with the SDK's message naming the
// operator, before anything of the module runs.
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {
sdk::Module describe() {
  return sdk::Module("sdk_bad_declaration", "1.0.0")
      .add(sdk::Operator("Test.SdkBad.Inconsistent_v1")
               .stateful()
               .draws(UMLOS_STREAM_MISC, 0)
               .output("y", UMLOS_DTYPE_F64)
               .run([](sdk::Context&) {}));
}
}  // namespace

UMLOS_SDK_MODULE(describe)
