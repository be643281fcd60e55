// Run folders received from elsewhere, as `umlos report RUN_DIR` and
// `umlos replay --verify RUN_DIR` read them: the input is cut at NUL bytes
// into trace.jsonl, value_arenas.json, failure.json, memory_plan.svg and
// tape.bin (a missing part: no such file). The report is rendered, the trace
// compared with itself (it must be identical) and the tape read.
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "tape.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kFiles[] = {"trace.jsonl", "value_arenas.json", "failure.json", "memory_plan.svg",
                                       "tape.bin"};
  const std::string dir = umlos_fuzz::scratch() + "/run";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  size_t part = 0, start = 0;
  for (size_t i = 0; i <= size && part < 5; ++i) {
    if (i == size || data[i] == 0) {
      umlos_fuzz::put(std::string("run/") + kFiles[part++], data + start, i - start);
      start = i + 1;
    }
  }
  const std::string trace = dir + "/trace.jsonl";
  umlos_fuzz::guarded([&] { (void)umlos::render_report(dir); });
  umlos_fuzz::guarded([&] {
    const umlos::TraceDiff d = umlos::compare_traces(trace, trace);
    if (!d.identical) umlos_fuzz::finding("replay", "a trace differs from itself");
  });
  if (part == 5) umlos_fuzz::guarded([&] { (void)umlos::read_tape(dir + "/tape.bin"); });
  return 0;
}
