// value_memory.tests.cpp — the memory behind a value an operator creates
// (services->value_create) when no arena places it: a fresh driver buffer,
// handed out unzeroed where the driver can allocate so (ABI 1.10
// buffer_alloc_uninit) and zeroed by the kernel only before a first use
// that is not a whole write (ZeroTensor_v1); and the host view of a tensor
// (ABI 1.11 tensor_host_view), the bytes where they lie or nothing.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "error.hpp"
#include "host.hpp"
#include "test_support.hpp"
#include "value_writer_support.hpp"

using namespace umlos_test;

namespace {

// A Host with `driver` active and the value_writer test operator, no
// run-state arenas: each call creates lz.v in a driver buffer of its own.
struct Writer {
  umlos::Host host;
  const umlos_operator_desc* op = nullptr;
  int64_t t = 0;

  Writer(const std::string& driver_module, const std::string& driver) {
    host.load(module_path(driver_module), std::nullopt);
    host.load(module_path("test_value_writer"), std::nullopt);
    host.activate_driver(driver);
    op = host.find_operator("Test.ValueWriter_v1");
    REQUIRE(op != nullptr);
  }

  // Calls the operator in `mode`; lz.v's values afterwards.
  std::vector<double> call(const std::string& mode) {
    call_value_writer(host, op, mode, ++t);
    return value_writer_output(host);
  }

  // Buffers of lz.v written whole with non-zero values, then freed as the
  // next call replaces the value: the blocks a new lz.v may be given.
  void dirty() {
    for (int k = 0; k < 4; ++k) {
      const double written = static_cast<double>(t + 2);  // the next call's iteration + 1
      CHECK(call("whole") == std::vector<double>(64, written));
    }
  }
};

}  // namespace

TEST_CASE("A new value in a driver buffer handed out unzeroed reads as zeros wherever its operator did not write",
          "[kernel][contract]") {
  Writer w("umlos_cpu_driver", "cpu_driver");
  REQUIRE(w.host.device().allocates_unzeroed());
  w.dirty();
  std::vector<double> head(64, 0.0);
  std::fill(head.begin(), head.begin() + 8, 5.0);
  CHECK(w.call("partial") == head);
  w.dirty();
  CHECK(w.call("untouched") == std::vector<double>(64, 0.0));
  w.dirty();
  CHECK(w.call("read_first") == std::vector<double>(64, 9.0));  // the operator checked the zeros itself
  w.dirty();
  CHECK(w.call("dispatch") == std::vector<double>(64, 1.0));  // accumulate reads its output
  w.dirty();
  CHECK(w.call("view_first") == std::vector<double>(64, 0.0));  // the operator checked the view's zeros
}

TEST_CASE(
    "tensor_host_view shows an operator a tensor's bytes where cpu_driver keeps them, and nothing on a driver that "
    "does not expose its memory",
    "[kernel][abi]") {
  Writer cpu("umlos_cpu_driver", "cpu_driver");
  CHECK(cpu.call("view") == std::vector<double>(64, 1.0));  // a view, equal to what tensor_read gives
  // The SDK's template driver keeps host memory but gives no address
  // (no buffer_host_address): UNAVAILABLE, which the SDK turns into nullptr.
  Writer tpl("umlos_template_driver", "template_driver");
  CHECK(tpl.call("view") == std::vector<double>(64, 2.0));
  CHECK(tpl.call("view_first") == std::vector<double>(64, 0.0));
  // A handle that is no tensor of the call: refused, naming the service,
  // and no address handed out (the operator checks that itself).
  try {
    cpu.call("view_bogus");
    FAIL("the host view of a bogus handle was given");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
    CHECK_THAT(f.what(), Catch::Contains("tensor_host_view: tensor handle is NULL or not valid in this call"));
  }
}
