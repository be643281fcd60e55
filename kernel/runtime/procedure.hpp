// procedure.hpp — the spec 004 section VI procedure, driven by the manifest.
//
// The kernel knows roles ("model_encode_op", "update_op", ...), never
// operators: each step calls whatever fully-qualified operator the manifest
// names for that role (a role left out is a step skipped). Data flows
// between steps through named values (docs/contracts.md lists the names the
// kernel itself reads: loss_total, action, terminate, state_fp, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "manifest.hpp"
#include "ranks.hpp"

namespace umlos {

struct RunOptions {
  // Folder for trace.jsonl and failure.json. Empty: the job's namespace
  // folder UML_OS_ROOT/namespaces/<org>/<unit>/<project>/<experiment>/<job_id>.
  std::string run_dir;
  bool quiet = false;             // no progress lines on stderr
  bool strict_contracts = false;  // Host::set_strict_contracts
  bool profile = false;           // print where the time went; write RUN_DIR/profile.json
  // Hash StateFingerprint_v1's bytes (services->digest_output) before the
  // next step starts instead of on a second thread while it runs. The
  // digests and every file of the run are the same either way.
  bool sync_fingerprints = false;
  // Hash them two steps at a time on the run's own thread (DigestWorker's
  // Mode::pairs), as the ranks of a job that leave no core free do anyway.
  bool paired_fingerprints = false;
  // Checkpoints (docs/checkpoint.md): one after the iter record of every
  // t % checkpoint_every == 0 (0: none; -1: the manifest's
  // config.checkpoint_every, default none).
  int64_t checkpoint_every = 0;
  // Continue the run in run_dir from its latest checkpoint (or resume_from).
  bool resume = false;
  std::string resume_from;
  // Module files to load in place of the manifest's paths, one per
  // `modules:` entry in order (umlos replay chooses them); each is still
  // verified against the manifest's pin. Empty: the manifest's paths.
  std::vector<std::string> module_files;
  // This process's place in a multi-rank job (docs/distributed.md): rank 0
  // writes the run folder; another rank writes into a private folder of
  // its own (run_dir), which it removes when the job succeeds.
  WorldOptions world;
  // A rank other than 0 resuming a job: rank 0's checkpoint file, whose
  // values it restores into its own fresh folder (rank 0 alone continues
  // the job's trace and tape).
  std::string replica_from;
};

// Runs the procedure. Returns the process exit status: 0 on success, else
// exit_code_for(failure code) after writing the failure record (0.K).
int run_manifest(const std::string& manifest_file, const RunOptions& options);

// The configuration operators see (services config_*): `config:` plus the
// manifest's `policy` and `datasets`. MANIFEST_INVALID when config: uses
// one of those two names itself.
cbor::Value operator_config(const Manifest& m);

// The job folder's name under the namespace: the first 8 hex digits of
// manifest_hash, so manifests that differ in anything (config included)
// get different folders (docs/spec-notes.md, 0.N).
std::string job_id(const Manifest& m);

// UML_OS_ROOT, or "./umlos_root" when the variable is unset.
std::string umlos_root();

}  // namespace umlos
