// A module whose operator body throws a C++ exception: the SDK must contain
// it (no std::terminate, no unwinding into the kernel) and turn it into
// UMLOS_INTERNAL with the exception's message, which `umlos conformance`
// then reports as a failure of that operator.
#include <stdexcept>

#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {
void body(sdk::Context& c) {
  (void)c.read<double>(c.input("x"));
  throw std::runtime_error("deliberate failure 4711 from a module body");
}

sdk::Module describe() {
  return sdk::Module("sdk_throwing_body", "1.0.0")
      .add(sdk::Operator("Test.SdkBad.Throws_v1")
               .pure()
               .input("x", UMLOS_DTYPE_F64)
               .output("y", UMLOS_DTYPE_F64)
               .run(body)
               .test(sdk::TestVector("throws").input<double>("x", {1}, {1.0}).expect<double>("y", {1}, {1.0})));
}
}  // namespace

UMLOS_SDK_MODULE(describe)
