// replay_checkpoints.hpp — the checkpoints part of `umlos replay --verify`
// (docs/checkpoint.md): a recorded run is "identical" only when every
// checkpoint it holds is intact, belongs to the run, and equals the rerun's
// checkpoint of the same t where the rerun writes one.
#pragma once

#include <cstddef>
#include <string>

#include "manifest.hpp"

namespace umlos {

// Every RUN_DIR/checkpoints/ckpt_<t>.pb must decode (content_sha256,
// framing, value sizes: read_checkpoint) and carry the manifest's
// manifest_hash and replay_token; RUN_DIR/checkpoints/latest, when present,
// must name one of them. Throws Failure (CHECKPOINT_INVALID naming the file
// and field; NOT_FOUND for a checkpoint `latest` names that is missing).
// Returns the number of checkpoints checked (0 without a checkpoints folder).
size_t check_recorded_checkpoints(const std::string& run_dir, const Manifest& manifest);

struct CheckpointComparison {
  size_t compared = 0;     // checkpoints both runs wrote at the same t
  std::string difference;  // "" or "ckpt_00000004.pb (t=4): value 'theta.w': ..."
};

// Compares each recorded checkpoint with the rerun's file of the same name:
// t, modules, manifest hash, every value (name, dtype, shape, bytes), the
// RNG, state_fp, functional_fp and the tape state. trace_bytes is left out:
// the run header holds the run folder's path, so the rerun's trace differs
// in length, not in records (compare_traces checks the records).
CheckpointComparison compare_checkpoints(const std::string& recorded_run_dir, const std::string& rerun_dir);

}  // namespace umlos
