// driver_fallback.tests.cpp — driver.fallback: a driver that offers a few
// primitives (the SDK's template driver: 8 of 78) trains the shipped digits
// manifest with cpu_driver running, with explicit transfers, every primitive
// it lacks or refuses; the results are cpu_driver's, bit for bit, and the
// run_header says which primitives the fallback ran.
#include <catch2/catch.hpp>

#include "error.hpp"
#include "run_support.hpp"
#include "test_support.hpp"

using namespace umlos_test;
using json = nlohmann::json;

namespace {

// The shipped manifest's driver name, up to its trailing comment (which the
// replacement keeps as a comment line).
const std::string kDriverLines = "  name: cpu_driver ";

std::string with_template_driver(const std::string& tag, const std::string& driver_lines) {
  const std::string pin = "  - path: \"../modules/libumlos_template_driver.so\"\n    sha256: " +
                          umlos::to_hex(umlos::hash_module_file(module_path("umlos_template_driver"))) + "\n";
  return variant(
      "digits", tag,
      {{"  - path: \"../modules/libumlos_cpu_driver.so\"", pin + "  - path: \"../modules/libumlos_cpu_driver.so\""},
       {kDriverLines, driver_lines},
       {"max_steps: 1500", "max_steps: 120"}});
}

}  // namespace

TEST_CASE("a driver with eight primitives trains digits through its cpu_driver fallback, bit for bit as cpu_driver",
          "[fallback][driver][manifest]") {
  const std::string reference = variant("digits", "fallback-ref", {{"max_steps: 1500", "max_steps: 120"}});
  const std::string fallback = with_template_driver("fallback",
                                                    "  name: template_driver\n  fallback: cpu_driver\n"
                                                    "  fallback_config: {threads: 1}\n  #");
  Run ref = run_ok(reference, "fallback-ref");
  Run fb = run_ok(fallback, "fallback");
  const std::vector<std::string> a = state_fps(ref.trace()), b = state_fps(fb.trace());
  CHECK(a.size() == 120);
  CHECK(a == b);  // every iteration's state fingerprint equal
  const json end_ref = records(ref.trace()).back(), end_fb = records(fb.trace()).back();
  CHECK(end_ref["functional_fp"] == end_fb["functional_fp"]);
  CHECK(end_ref["tape_digest"] == end_fb["tape_digest"]);
  CHECK(end_ref["backend_hash"] != end_fb["backend_hash"]);  // two drivers ran: another backend

  const json header = records(fb.trace()).front();
  CHECK(header["driver"] == "template_driver");
  CHECK(header["driver_fallback"] == "cpu_driver");
  const auto routed = header["fallback_primitives"].get<std::vector<std::string>>();
  CHECK(routed.size() == 70);  // the catalogue's 78 less the template's 8
  CHECK(std::find(routed.begin(), routed.end(), "matmul_grad") != routed.end());
  CHECK(std::find(routed.begin(), routed.end(), "relu") == routed.end());  // the template runs relu itself
  CHECK_FALSE(records(ref.trace()).front().contains("driver_fallback"));
}

TEST_CASE("without a fallback, a driver that lacks a primitive the model needs fails naming it",
          "[fallback][driver][manifest]") {
  const std::string m = with_template_driver("no-fallback", "  name: template_driver\n  #");
  Run r = run(m, "no-fallback");
  INFO(r.result.output);
  CHECK(r.result.exit_status == umlos::exit_code_for(UMLOS_PRIMITIVE_UNSUPPORTED));
  CHECK_THAT(r.result.output, Catch::Contains("PRIMITIVE_UNSUPPORTED") && Catch::Contains("template_driver"));
}

TEST_CASE("a bad driver.fallback is refused naming the key", "[fallback][driver][manifest]") {
  Run unknown =
      run(with_template_driver("fb-unknown", "  name: template_driver\n  fallback: gpu_magic\n  #"), "fb-unknown");
  CHECK(unknown.result.exit_status == umlos::exit_code_for(UMLOS_NOT_FOUND));
  CHECK_THAT(unknown.result.output, Catch::Contains("fallback driver (driver.fallback) 'gpu_magic'"));
  Run same =
      run(with_template_driver("fb-same", "  name: template_driver\n  fallback: template_driver\n  #"), "fb-same");
  CHECK(same.result.exit_status == umlos::exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK_THAT(same.result.output, Catch::Contains("driver.fallback") && Catch::Contains("expected another driver"));
}
