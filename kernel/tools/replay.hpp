// replay.hpp — trace comparison and `umlos replay --verify RUN_DIR`: rerun
// the manifest a run recorded and compare the two traces record by record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace umlos {

// Fields that may legitimately differ between two runs of one manifest
// (wall-clock figures). compare_traces skips them in every record.
const std::vector<std::string>& trace_fields_ignored();

struct TraceDiff {
  bool identical = true;
  uint64_t records = 0;  // records compared (identical: records in each file)
  uint64_t line = 0;     // 1-based line of the first difference
  std::string record;    // its record kind ("iter", "run_end", ...; "" when one file ended)
  int64_t t = -1;        // its t, -1 when the record has none
  std::string field;     // the first differing field; "(record)" when one file has no record there
  std::string a_value;   // JSON text in file a ("(absent)" when missing)
  std::string b_value;
  // "identical" or "line 12 (iter t=11): field 'loss_total': a 0.5, b 0.25".
  std::string describe() const;
};

// Compares two trace.jsonl files record by record (line by line), every
// field except trace_fields_ignored(), values compared as their JSON text
// (so 0.1 and 0.10000000000000002 differ). Fields are visited in the order
// record, t, then the rest sorted by name. A line that is not a JSON object
// is Failure(DATA_LOSS) naming the file and line; a missing file NOT_FOUND.
TraceDiff compare_traces(const std::string& a, const std::string& b);

// Exit status of `umlos replay --verify` when the rerun's trace differs from
// the recorded one (docs/checkpoint.md). Failures of the command itself use
// exit_code_for(code); a rerun that fails for another reason than the
// recorded run exits with that failure's status.
inline constexpr int kReplayDiffersExit = 3;

struct ReplayOptions {
  std::string run_dir;                    // the recorded run
  std::string manifest_file;              // default RUN_DIR/manifest.yaml
  std::string work_dir;                   // where to rerun; default a fresh folder under the system temp dir
  bool keep = false;                      // keep work_dir even when identical
  std::string modules_dir;                // --modules: load each module from DIR/<its file name>
  bool trust_run_folder_modules = false;  // allow module files inside run_dir (their code runs)
};

// The whole `umlos replay --verify`: checks the run folder (trace.jsonl,
// manifest copy, manifest.cbor when present, the run header's
// manifest_hash), chooses the module files (never inside run_dir unless
// trust_run_folder_modules: PERMISSION_DENIED), reruns into work_dir with run_manifest(quiet), compares
// the traces (and tape.bin digests when both runs wrote one). Prints
// "identical" or the difference on stdout; returns 0, kReplayDiffersExit, or
// the failure's exit status. Throws Failure for a bad run folder.
int replay_verify(const ReplayOptions& options);

// `umlos replay --verify RUN_DIR [--manifest F] [--modules DIR]
// [--trust-run-folder-modules] [--work DIR] [--keep]`
// (arguments after "replay"). Usage errors throw boost::program_options::error.
int cmd_replay(const std::vector<std::string>& args);

}  // namespace umlos
