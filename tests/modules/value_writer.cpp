// value_writer.cpp — an operator that creates the value lz.v (f64[64]) and
// uses it as config value_writer.mode says, for the test that a value
// handed out from a run-state arena slot reads as zeros however it is
// first used (ZeroTensor_v1), though the kernel zeroes a slot only when
// the value is not first written whole:
//   whole      write all 64 elements with the iteration number + 1
//   partial    write elements [0, 8) with 5.0 (the rest must read 0)
//   untouched  create it and nothing else (all must read 0)
//   read_first read it (Error if any element is not 0), then write it whole
//   dispatch   accumulate lz.one (ones) into it with the driver (all 1)
//   view_first take its host view (ABI 1.11) first: Error if a byte seen
//              through it is not 0
//   view       write it whole, take its host view (Error if the view's
//              bytes are not the tensor's), then write it whole with 1.0
//              where there was a view and 2.0 where the driver gave none
//   view_bogus ask for the host view of a handle that is no tensor: the
//              kernel's refusal (INVALID_ARGUMENT) is the call's failure
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

void write_value(sdk::Context& c) {
  const std::string mode = c.config("value_writer.mode", "whole");
  umlos_tensor* v = c.output("lz.v", UMLOS_DTYPE_F64, {64});
  if (mode == "whole") {
    c.write(v, std::vector<double>(64, static_cast<double>(c.iteration() + 1)));
  } else if (mode == "partial") {
    const std::vector<double> head(8, 5.0);
    c.write_bytes(v, 0, head.data(), head.size() * 8);
  } else if (mode == "read_first") {
    for (double x : c.read<double>(v))
      if (x != 0.0) throw sdk::Error(UMLOS_INTERNAL, "a new value read ", x, " before it was written");
    c.write(v, std::vector<double>(64, 9.0));
  } else if (mode == "dispatch") {
    umlos_tensor* one = c.temp(UMLOS_DTYPE_F64, {64});
    c.write(one, std::vector<double>(64, 1.0));
    c.dispatch("accumulate", {one}, {v});
  } else if (mode == "view_first") {
    const auto* p = static_cast<const double*>(c.host_view(v));
    for (int i = 0; p != nullptr && i < 64; ++i)
      if (p[i] != 0.0) throw sdk::Error(UMLOS_INTERNAL, "the host view of a new value showed ", p[i]);
  } else if (mode == "view") {
    std::vector<double> values(64);
    for (int i = 0; i < 64; ++i) values[i] = 0.5 * i - 3.0;
    c.write(v, values);
    const auto* p = static_cast<const double*>(c.host_view(v));
    if (p != nullptr && std::vector<double>(p, p + 64) != c.read<double>(v))
      throw sdk::Error(UMLOS_INTERNAL, "the host view does not show the tensor's values");
    c.write(v, std::vector<double>(64, p != nullptr ? 1.0 : 2.0));
  } else if (mode == "view_bogus") {
    const void* p = &mode;  // must come back NULL
    const umlos_status st = c.services()->tensor_host_view(c.raw(), reinterpret_cast<const umlos_tensor*>(&mode), &p);
    if (p != nullptr) throw sdk::Error(UMLOS_INTERNAL, "a refused host view left an address");
    throw sdk::Error(st, "the host view of a bogus handle was refused");
  } else if (mode != "untouched") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "value_writer.mode '", mode, "'");
  }
}

sdk::Module describe() {
  return sdk::Module("test_value_writer", "1")
      .add(sdk::Operator("Test.ValueWriter_v1")
               .summary("creates lz.v and uses it as config value_writer.mode says")
               .pure()
               .output("lz.v", UMLOS_DTYPE_F64, {64}, UMLOS_VALUE_PERSISTENT)
               .run(write_value));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
