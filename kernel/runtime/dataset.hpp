// dataset.hpp — data sets under UML_OS_ROOT (spec 004 0.L, 0.N, 0.P, III.B):
// strict import of raw CSV files into immutable, content-addressed folders
// (UML_OS.Data.Manifest_v1), verification (UML_OS.Data.ValidateManifest_v1),
// and the bootstrap step that turns a manifest's `datasets:` entries into the
// values of docs/training.md (data.train.x, data.norm.offset, ...).
//
// Layout (docs/data.md):
//   UML_OS_ROOT/datasets/<id>-<version>-<hash16>/
//     train.csv     rows of the train split: D features then the label/target
//     val.csv       the same for the validation split
//     dataset.json  the record: id, version, task, counts, per split file name,
//                   row count and SHA-256, normalisation statistics
//   <hash16> = the first 16 hex digits of SHA-256(dataset.json bytes).
//   A manifest's `datasets[i].hash` is the SHA-256 of that split's file.
//
// Every failure is umlos::Failure with a code of abi/umlos_abi.h and a
// message naming the file (line and column for bad rows), the expected and
// the actual value (docs/data.md lists the codes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sha256.hpp"
#include "umlos_names.h"

namespace umlos {

class Host;
struct Manifest;

enum class TaskType {
  Multiclass = UMLOS_TASK_MULTICLASS,
  Binary = UMLOS_TASK_BINARY,
  Regression = UMLOS_TASK_REGRESSION
};
const char* task_name(TaskType t);
// "multiclass" | "binary" | "regression"; nullopt otherwise.
std::optional<TaskType> parse_task(const std::string& s);

// How a raw file is read (`umlos dataset import`, or `config.data.*` when a
// manifest entry's `path:` is imported at bootstrap).
struct ImportOptions {
  std::string id;       // [A-Za-z0-9_.]+, no '-'
  std::string version;  // [A-Za-z0-9_.]+, no '-'
  TaskType task = TaskType::Multiclass;
  std::string features_file;          // CSV, optionally gzip-compressed (.gz or gzip magic)
  std::string target_file;            // optional: one target value per line (diabetes)
  std::string label_column = "last";  // last | first | <0-based column>; ignored with target_file
  std::string header = "none";        // none | line (skip one line) | sklearn ("N,D,names..." checked)
  std::string delimiter = "auto";     // auto | comma | space (runs of blanks)
  double val_fraction = 0.2;          // [0, 1): share of rows in the val split
  int64_t num_classes = 0;            // multiclass: 0 = max label + 1
  std::string root;                   // UML_OS_ROOT; empty = umlos_root()
};

struct SplitInfo {
  std::string file;  // "train.csv" / "val.csv"
  uint64_t rows = 0;
  Digest sha256{};
};

// The parsed dataset.json of a data set folder.
struct DatasetRecord {
  std::string dir;  // the folder
  std::string id, version;
  TaskType task = TaskType::Multiclass;
  int64_t num_features = 0;
  int64_t num_classes = 1;  // C for multiclass, 1 otherwise
  SplitInfo train, val;
  std::vector<double> offset, scale;       // per feature (III.B), from the train split
  double target_mean = 0, target_std = 0;  // regression only (population std)
  Digest record_sha256{};                  // SHA-256 of dataset.json
};

// One split in memory: x row-major [rows, D] binary64, y [rows] (labels as
// integral binary64 for multiclass/binary).
struct SplitData {
  uint64_t rows = 0;
  std::vector<double> x;
  std::vector<double> y;
};

struct Dataset {
  DatasetRecord record;
  SplitData train, val;
};

// Imports (strict parse, deterministic split, statistics) and places the
// data set atomically under ROOT/datasets/. Importing the same content twice
// returns the existing folder (verified). Throws Failure.
DatasetRecord import_dataset(const ImportOptions& options);

// UML_OS.Data.ValidateManifest_v1 for one folder: dataset.json well-formed
// and matching the folder name, every split file's SHA-256 and row count,
// strict re-parse, statistics recomputed bit for bit.
Dataset verify_dataset(const std::string& dir);

// The data set a manifest's `datasets:` entries name, found under ROOT
// (UML_OS_ROOT) and verified; imported first from the entry's `path:` when
// absent (docs/data.md: `config.data.*` gives the import options). nullopt
// when the manifest lists no data set.
std::optional<Dataset> resolve_manifest_datasets(const Manifest& m, const std::string& root = "");

// Writes the docs/training.md values of `d` into the host's value store
// (non-persistent): data.train.x/y, data.val.x/y, data.norm.offset/scale,
// data.num_classes, and for regression data.target.mean/std. Needs an active
// driver (Host::activate_driver).
void put_dataset_values(const Dataset& d, Host& host);

// Bootstrap (spec 004 0.P "data manifest load + validation"):
// resolve_manifest_datasets + put_dataset_values. Returns the record (for the
// run header), or nullopt when the manifest lists no data set.
std::optional<DatasetRecord> load_datasets(const Manifest& m, Host& host);

}  // namespace umlos
