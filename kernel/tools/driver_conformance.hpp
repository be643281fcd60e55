// driver_conformance.hpp — the primitive-by-primitive part of `umlos
// conformance` for a driver a module offers: every case of the primitive
// catalogue (primitive_catalogue.hpp), forward and gradient, in float32 and
// float64, at sizes that include empty and size-1 shapes and multi-chunk
// sums, run on the driver and on the reference driver (cpu_driver) and
// compared: bitwise, or within close_enough() for the transcendental
// primitives; a refusal must be the reference's refusal (same code). Each
// primitive runs in its own child process (isolated.hpp) under the case
// timeout. Also says which primitives the driver lacks, and which of those
// the shipped operators need.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "umlos_abi.h"

namespace umlos {

struct DriverCatalogueOptions {
  std::string module_path;       // the module offering the driver under test
  std::string driver_name;       // the driver's name
  std::string reference_module;  // the module offering the reference driver
  std::string reference_driver = "cpu_driver";
  double case_timeout_s = 60;  // per primitive (its forward and gradient cases); 0: none
};

// {"driver", "reference", "sizes", "rows": [{"primitive", "f32", "f64",
// "result" (PASS | FAIL | MISSING), "detail"}], "implemented", "catalogue",
// "missing": [...], "missing_required": [...], "ok"}. ok: every primitive the
// driver publishes conforms (missing ones are listed, not failed).
nlohmann::json check_driver_primitives(const DriverCatalogueOptions& options);

// The checks of a primitive a module provides (ABI 1.6), in a child
// process: for an ELEMENTWISE one, on the reference driver, f32 and f64,
// shapes [3,5], [1] and [0,4]: two runs give the same bytes, outputs are
// finite where inputs are, and, when the module also provides
// "<name>_grad", the gradient agrees with central finite differences of the
// forward in f64 (|analytic - numeric| <= 1e-6 * max(|numeric|, 1)).
// {"primitive", "result" (PASS | FAIL | SKIP), "detail"}; a "_grad" whose
// forward the module provides is checked with it (SKIP, saying so).
nlohmann::json check_module_primitive(const DriverCatalogueOptions& options, const umlos_primitive_desc* primitive);

}  // namespace umlos
