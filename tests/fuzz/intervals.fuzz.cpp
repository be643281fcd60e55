// `umlos plan FILE` inputs (docs/tmmu.md): the first byte picks the reader
// (0: interval JSON, 1: CSV with the alignment 2^(second byte mod 13),
// 2: a .json.gz file through read_intervals, gzip included), the rest is the
// file. Each accepted set becomes a plan request and its per-arena facts
// (what the checker and the planners read first).
#include <string>

#include "fuzz_support.hpp"
#include "plan/checker.hpp"
#include "plan/intervals.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int reader = data[0] % 3;
  const uint64_t alignment = uint64_t{1} << (data[1] % 13);
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  umlos_fuzz::guarded([&] {
    namespace plan = umlos::plan;
    plan::IntervalSet set;
    if (reader == 0) {
      set = plan::parse_intervals_json(text, "fuzz.json");
    } else if (reader == 1) {
      set = plan::parse_intervals_csv(text, "fuzz.csv", alignment);
    } else {
      set = plan::read_intervals(umlos_fuzz::put("fuzz.json.gz", text));
    }
    plan::PlanInput in;
    plan::make_request(set, {}, in);
    (void)plan::arena_facts(in.request);
  });
  return 0;
}
