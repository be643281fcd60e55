// Policy conditions (`policy.rules[i].cond` of a manifest; docs/policy.md):
// parse, print the canonical form, re-parse it (it must print and evaluate
// the same), evaluate on fixed metrics (before the first probe: NaNs; and
// a later state), and parse it as one rule of a rule set.
#include <string>

#include "fuzz_support.hpp"
#include "rules.hpp"

namespace {
bool named(const std::exception& e) { return dynamic_cast<const umlos::policy::PolicyError*>(&e) != nullptr; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace p = umlos::policy;
  p::Metrics first, later;
  later.sil_mean = 0.25, later.loss_delta = -1e-3, later.grad_norm = 3.5, later.resource_util = 0.9;
  later.t = 120, later.state = 1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  umlos_fuzz::guarded(
      [&] {
        const p::Condition c = p::parse_condition(text);
        const p::Condition again = p::parse_condition(c.canonical());
        if (again.canonical() != c.canonical()) umlos_fuzz::finding("policy", "canonical form is not stable");
        for (const p::Metrics& m : {first, later}) {
          if (again.evaluate(m) != c.evaluate(m)) umlos_fuzz::finding("policy", "canonical form evaluates differently");
        }
        (void)p::parse_rules({{text, "optimize", 0}, {"t mod 10 == 0", "probe", 1}});
      },
      named);
  return 0;
}
