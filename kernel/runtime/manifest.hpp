// manifest.hpp — run manifests: YAML in, schema-validated, canonicalised to
// deterministic CBOR, hashed. The schema is documented in docs/manifest.md.
//
// Every error is umlos::Failure(UMLOS_MANIFEST_INVALID) whose message starts
// with "FILE:LINE:COLUMN: key 'a.b[2].c': " and says what was expected and
// what was found (malformed YAML gives yaml-cpp's position the same way).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cbor.hpp"
#include "sha256.hpp"
#include "umlos_abi.h"

namespace umlos {

inline constexpr const char* kDefaultSpecVersion = UMLOS_SPEC_VERSION;  // abi/umlos_abi.h
inline constexpr int64_t kDaemonConcurrencyMax = 16;                    // spec 004 0.Q

// Bounds on what a YAML document may cost (docs/security.md): a manifest
// file is at most kManifestReadLimit bytes (fsutil.hpp), a standalone YAML
// value (ModelIR files, test vectors) at most kYamlValueSizeLimit, and
// either expands (aliases included) to at most kMaxYamlNodes nodes.
inline constexpr uint64_t kYamlValueSizeLimit = uint64_t{64} << 20;  // 64 MiB
inline constexpr size_t kMaxYamlNodes = 1'000'000;

// budgets.memory_bytes when the manifest gives none: the bytes all live
// tensors of a run may hold (Host::make_tensor checks it before allocating).
// A manifest sets 0 for no limit (docs/manifest.md).
inline constexpr uint64_t kDefaultMemoryBudget = uint64_t{4} << 30;  // 4 GiB

// The VI-procedure roles an `operators:` map may name (docs/manifest.md).
const std::vector<std::string>& operator_roles();

struct SourceMark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

struct ModuleEntry {
  std::string path;           // as written in the manifest
  std::string resolved_path;  // relative paths resolved against the manifest's folder
  Digest sha256{};            // the pin
  bool pinned = false;        // false only for the literal "unpinned" (allowed by pin)
  SourceMark mark;            // where the entry starts
};

// What the procedure reads from a manifest besides its operators, typed
// once when the manifest is read (docs/manifest.md). The config: keys are
// also seen by operators (operator_config in procedure.hpp).
struct RunSettings {
  int64_t max_steps = 100;               // config.max_steps (no termination_op: the last t)
  int64_t checkpoint_every = 0;          // config.checkpoint_every (0: no periodic checkpoints)
  int64_t functional_fp_every = 50;      // config.functional_fp_every (0: none but the final one)
  int64_t checkpoint_keep = 0;           // config.checkpoint_keep: newest files kept (0: all)
  std::string task_type = "multiclass";  // config.task_type when a string (the trace's run_header)
  // budgets.memory_bytes: the bytes all live tensors may hold (0: no
  // limit); kDefaultMemoryBudget when the manifest gives none.
  uint64_t memory_bytes = kDefaultMemoryBudget;
  bool memory_bytes_is_default = true;
  uint64_t op_timeout_s = 0;  // budgets.op_timeout_s (0: off)
  uint64_t disk_bytes = 0;    // budgets.disk_bytes (0: unlimited)
  bool trace_path = false;    // trace.path given (the run refuses it)
};

// One operator of a role (docs/manifest.md, "Wiring"): its name, the run
// values its declared inputs read and its declared outputs write (a name
// not listed keeps its own), and its own config keys.
struct OperatorEntry {
  std::string name;
  std::map<std::string, std::string> inputs;   // declared input -> run value read
  std::map<std::string, std::string> outputs;  // declared output -> run value written
  cbor::Value config;                          // map over the manifest's config, this operator only (empty: none)
  std::string path;                            // dotted key path ("operators.next_batch_op[1]")
};

struct Manifest {
  std::string file;  // path as given
  std::string dir;   // its folder (for relative module paths)

  // Canonical form: the whole manifest with defaults filled in
  // (spec_version, seed) and modules[].path removed: a module is identified
  // by its SHA-256, not by where it lies (docs/spec-notes.md).
  cbor::Value canonical;
  std::vector<uint8_t> canonical_bytes;  // cbor::encode(canonical)

  Digest manifest_hash{};      // SHA-256(canonical_bytes)
  Digest policy_hash{};        // SHA-256(encode(canonical["policy"] or {}))
  Digest env_manifest_hash{};  // SHA-256(encode(env_manifest())), see docs/manifest.md
  Digest replay_token{};       // SHA-256(spec_version || policy_hash || env_manifest_hash || seed_u64_be)

  std::string name;
  std::string spec_version;
  uint64_t seed = 0;
  std::vector<ModuleEntry> modules;  // in manifest order
  std::string driver_name;
  cbor::Value driver_config;  // map (empty when absent)
  // driver.fallback: a second loaded driver that runs, with explicit
  // transfers, the primitives the first one lacks ("" when absent).
  std::string driver_fallback;
  cbor::Value driver_fallback_config;  // map (empty when absent)
  std::string tmmu_strategy;           // "" when absent
  cbor::Value tmmu_config;             // map (empty when absent)
  // Where the run state lives (kernel/runtime/value_arenas.hpp): "arenas" (the
  // default with a strategy) or "buffers" (one driver buffer per value).
  std::string tmmu_values = "arenas";
  cbor::Value config;  // the `config:` map (empty when absent)
  cbor::Value policy;  // the `policy:` map (empty when absent)
  cbor::Value env;     // the env manifest that env_manifest_hash covers
  // model_ir: the spec 004 model body as a ModelIR graph, {graph: MAP}
  // whether written inline or pinned as a file (null when absent). Operators
  // read it as config `model_ir` (docs/model.md).
  cbor::Value model_ir;
  std::string model_ir_file;  // the file it came from, resolved ("" inline or absent)
  std::string model_ir_text;  // that file's bytes, as hashed and parsed
  std::string text;           // the manifest's own bytes, as parsed
  // Where model_ir.path's scalar lies in `text` (begin == end: nowhere to
  // rewrite), for the run folder's self-contained copy.
  size_t model_ir_path_begin = 0, model_ir_path_end = 0;
  std::map<std::string, std::vector<OperatorEntry>> wiring;  // role -> its operators, in call order
  std::map<std::string, SourceMark> marks;                   // dotted key path -> position
  RunSettings settings;

  // The role's (first) operator name, "" when the manifest names none.
  std::string operator_for(const std::string& role) const;
  // "FILE:LINE:COLUMN" for a dotted key path ("operators.forward_op"), or FILE.
  std::string where(const std::string& dotted_key) const;
};

// The settings of a parsed manifest (manifest_settings.cpp): MANIFEST_INVALID
// for a config: setting of the wrong type or range.
RunSettings read_run_settings(const Manifest& m);

// Reads and validates FILE. allow_unpinned accepts `sha256: unpinned`
// (only `umlos manifest pin` wants that).
Manifest load_manifest(const std::string& file, bool allow_unpinned = false);
// The same from text; `file` is used in messages and `base_dir` for paths.
Manifest parse_manifest(const std::string& yaml_text, const std::string& file, const std::string& base_dir,
                        bool allow_unpinned = false);

// `umlos manifest pin IN -o OUT`: writes OUT (atomically) as a copy of IN's
// text in which every module's sha256 is the digest of its file (and
// model_ir.sha256 that of the model IR file) and every relative path is
// rewritten relative to OUT's folder. Comments and layout are kept. Throws
// MODULE_NOT_FOUND for a missing module file.
void pin_manifest(const std::string& in_file, const std::string& out_file);

// The manifest copy a run folder keeps (RUN_DIR/manifest.yaml): m.text,
// with model_ir.path naming `ir_copy` (the IR bytes saved beside it) when
// the manifest pins a model IR file, so that the folder alone replays.
std::string run_folder_manifest_text(const Manifest& m, const std::string& ir_copy);

// A standalone YAML (or JSON) document typed exactly as manifest `config:`
// values are (docs/manifest.md): for IR files and structured test-vector
// config. Errors are MANIFEST_INVALID naming `label`.
cbor::Value parse_yaml_value(const std::string& yaml_text, const std::string& label);

// Dotted lookup in a CBOR map tree ("optimizer.lr"); nullptr when absent.
const cbor::Value* lookup(const cbor::Value& root, std::string_view dotted);

}  // namespace umlos
