// out_of_memory.cpp — operators that ask for more memory than there is, one
// way each, so that the kernel's mapping of out-of-memory to
// RESOURCE_EXHAUSTED (naming the operator) is tested against a real module:
//   Test.OutOfMemory.Host_v1     std::bad_alloc inside the module's body
//   Test.OutOfMemory.Driver_v1   a temp of 2^61 bytes: the driver's allocation fails
//   Test.OutOfMemory.Wrapping_v1 a temp of shape [2^62 + 1, 4]: the byte size
//                                overflows 64 bits (INVALID_ARGUMENT, never a small buffer)
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

void host_alloc(sdk::Context& c) {
  std::vector<double> huge(static_cast<size_t>(1) << 59);  // 2^62 bytes
  huge[0] = 1;
  c.write(c.output("value", UMLOS_DTYPE_F64, {}), std::vector<double>{huge[0]});
}

void driver_alloc(sdk::Context& c) {
  umlos_tensor* t = c.temp(UMLOS_DTYPE_F64, {int64_t{1} << 30, int64_t{1} << 28});
  (void)t;
  c.write(c.output("value", UMLOS_DTYPE_F64, {}), std::vector<double>{1});
}

void wrapping(sdk::Context& c) {
  umlos_tensor* t = c.temp(UMLOS_DTYPE_F64, {(int64_t{1} << 62) + 1, 4});
  (void)t;
  c.write(c.output("value", UMLOS_DTYPE_F64, {}), std::vector<double>{1});
}

sdk::Operator op(const char* name, void (*body)(sdk::Context&)) {
  return sdk::Operator(name)
      .summary("asks for more memory than there is")
      .pure()
      .output("value", UMLOS_DTYPE_F64, sdk::Dims{})
      .run(body);
}

sdk::Module describe() {
  return sdk::Module("test_out_of_memory", "1")
      .add(op("Test.OutOfMemory.Host_v1", host_alloc))
      .add(op("Test.OutOfMemory.Driver_v1", driver_alloc))
      .add(op("Test.OutOfMemory.Wrapping_v1", wrapping));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
