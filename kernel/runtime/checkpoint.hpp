// checkpoint.hpp — spec 004 VIII checkpoints: the run state at iteration t
// as one deterministic protobuf message (kernel/runtime/proto/checkpoint.proto),
// written atomically to RUN_DIR/checkpoints/ckpt_<t, 8 digits>.pb, and the
// restore that refuses a checkpoint of another run. docs/checkpoint.md.
//
// Every refusal is Failure(UMLOS_CHECKPOINT_INVALID) whose message names the
// file and the field and gives the expected and the found value; a missing
// file is NOT_FOUND, an unreadable one IO_ERROR.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host.hpp"
#include "manifest.hpp"
#include "sha256.hpp"
#include "tape.hpp"

namespace umlos {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

// What the procedure knows besides the Host and the Manifest.
struct CheckpointExtras {
  std::optional<Digest> state_fp;       // the state fingerprint of iteration t
  std::optional<Digest> functional_fp;  // the last functional fingerprint, if any
  uint64_t trace_bytes = 0;             // trace.jsonl length after the iter record of t
  std::optional<TapeState> tape;        // TapeWriter::state(), when the run keeps a tape
};

struct CheckpointModule {
  std::string name;
  std::string version;
  Digest sha256{};
};

struct CheckpointValue {
  std::string name;
  HostTensor tensor;  // dtype, shape, raw little-endian bytes
};

struct CheckpointData {
  std::string file;  // where it was read from ("" when decoded from memory)
  uint32_t format_version = 0;
  std::string spec_version;
  std::vector<uint8_t> manifest_cbor;
  Digest manifest_hash{};
  std::vector<CheckpointModule> modules;
  int64_t t = 0;
  std::vector<CheckpointValue> values;  // sorted by name
  std::array<uint32_t, 2> rng_key{0, 0};
  std::array<uint64_t, UMLOS_STREAM_COUNT> rng_offsets{};
  Digest policy_hash{}, env_manifest_hash{}, replay_token{}, backend_hash{};
  std::optional<Digest> functional_fp;
  std::optional<Digest> state_fp;
  uint64_t trace_bytes = 0;
  std::optional<TapeState> tape;
};

// The checkpoint's bytes: t = host.iteration(), every persistent value of
// the host (persistent_value_names()), the RNG, the loaded modules, the
// manifest's canonical bytes and hashes, backend_hash =
// host.driver_fingerprint(). Deterministic: equal inputs give equal bytes.
std::vector<uint8_t> encode_checkpoint(const Manifest& manifest, const Host& host, const CheckpointExtras& extras);

// The checkpoint message for `data` as it stands (content_sha256 computed
// over it). encode_checkpoint builds its CheckpointData and calls this; tools
// and tests use it to re-encode a decoded checkpoint. It validates nothing:
// decode_checkpoint and restore_into are the checks.
std::vector<uint8_t> encode_checkpoint_data(const CheckpointData& data);

// Writes encode_checkpoint(...) atomically to
// RUN_DIR/checkpoints/ckpt_<t %08d>.pb, then RUN_DIR/checkpoints/latest (its
// file name and a newline), also atomically. Returns the checkpoint's path.
std::string write_checkpoint(const std::string& run_dir, const Manifest& manifest, const Host& host,
                             const CheckpointExtras& extras);

// Parses and validates a checkpoint: protobuf framing, content_sha256,
// format_version, digest sizes, manifest_hash = SHA-256(manifest_cbor),
// values sorted and unique with data sizes matching dtype and shape, four
// RNG offsets, tape state sizes. `label` names the source in messages.
CheckpointData decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& label);
CheckpointData read_checkpoint(const std::string& file);

// RUN_DIR/checkpoints/<name in `latest`>; NOT_FOUND when there is none.
std::string latest_checkpoint(const std::string& run_dir);

// RUN_DIR/checkpoints/ckpt_<t>.pb files, oldest first (by t).
std::vector<std::string> list_checkpoints(const std::string& run_dir);

// Removes all but the `keep` newest RUN_DIR/checkpoints/ckpt_<t>.pb (by t);
// never the one `latest` names. Returns the number removed.
size_t prune_checkpoints(const std::string& run_dir, size_t keep);

// Refuses (CHECKPOINT_INVALID) a checkpoint that does not belong to this
// run: manifest_cbor must equal manifest.canonical_bytes (the first
// differing byte offset is named), spec_version, policy_hash,
// env_manifest_hash and replay_token must equal the manifest's, and the
// modules must equal host.modules() (count, order, name, SHA-256).
// require_same_backend additionally compares backend_hash with
// host.driver_fingerprint().
struct RestoreOptions {
  bool require_same_backend = false;
};
void verify_checkpoint(const CheckpointData& ck, const Manifest& manifest, const Host& host,
                       const RestoreOptions& options = {});

// verify_checkpoint, then the restore validation (CHECKPOINT_INVALID naming
// the file, the value, the expected and the found dtype and shape): every
// value must be admitted by one of the PERSISTENT output declarations of the
// loaded operators that name it (when any does), and a value the host
// already holds as persistent (made by bootstrap) must keep its dtype and
// shape. Then every checkpoint value becomes a persistent value of the host
// (host.from_host + host.set_value), persistent values the checkpoint lacks
// are removed, the modules' UMLOS_CHECK_AFTER_RESTORE invariants run (a
// violation puts the old values back and is CHECKPOINT_INVALID), and the
// RNG key and offsets and t are set. Needs the host's driver active and its
// modules loaded.
void restore_into(Host& host, const CheckpointData& ck, const Manifest& manifest, const RestoreOptions& options = {});

// Resume, steps 2-4 of docs/checkpoint.md in one call, after bootstrap
// (modules loaded, driver active, bootstrap_op done): reads
// `checkpoint_file` (default latest_checkpoint(run_dir)), restore_into(host),
// then, when `tape` is given, tape->resume(RUN_DIR/tape.bin, ck.tape)
// (CHECKPOINT_INVALID when the checkpoint has no tape state), then
// truncate_trace(RUN_DIR/trace.jsonl, ck.trace_bytes). Returns the
// checkpoint (state_fp, functional_fp for the run_end record). When the
// latest checkpoint (no `checkpoint_file`) is missing, corrupt or refused,
// the failure keeps its code and its message names the newest older
// checkpoint that decodes and the command that resumes from it
// (umlos run --resume RUN_DIR --resume-from FILE); resume never falls back
// on its own. The caller
// then appends to the trace without a new run_header and continues the loop
// at the termination check after iteration ck.t.
class TapeWriter;
CheckpointData resume_from_checkpoint(Host& host, const Manifest& manifest, const std::string& run_dir,
                                      TapeWriter* tape, const std::string& checkpoint_file = "",
                                      const RestoreOptions& options = {});

// Cuts `trace_file` back to `bytes` (the checkpoint's trace_bytes) and
// fsyncs it. CHECKPOINT_INVALID when the file is shorter, or when the kept
// part does not end with a newline (bytes > 0).
void truncate_trace(const std::string& trace_file, uint64_t bytes);

}  // namespace umlos
