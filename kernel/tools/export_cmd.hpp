// export_cmd.hpp — `umlos export RUN_DIR -o FILE`: a run's trained
// parameters in the safetensors format (docs/checkpoint.md, "Export"), for
// NumPy, PyTorch and JAX users who read them with the safetensors library,
// without UML_OS.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint.hpp"

namespace umlos {

// The safetensors bytes of `ck`'s values whose names are in `names` (in that
// order; each must be a value of ck): an 8-byte little-endian header length
// N, N bytes of JSON header (padded with spaces to a multiple of 8)
// {"NAME": {"dtype": "F64", "shape": [...], "data_offsets": [begin, end]},
// ..., "__metadata__": {...}}, then the tensors' raw little-endian bytes,
// row-major, contiguous in `names` order.
std::vector<uint8_t> safetensors_bytes(const CheckpointData& ck, const std::vector<std::string>& names,
                                       const std::map<std::string, std::string>& metadata);

struct ExportOptions {
  std::string run_dir;
  std::string output;       // the .safetensors file to write
  std::string checkpoint;   // default: the one RUN_DIR/checkpoints/latest names
  bool all_values = false;  // every persistent value, not only the parameters
};

struct ExportResult {
  std::string checkpoint;  // the file exported
  int64_t t = 0;
  size_t tensors = 0;
  uint64_t bytes = 0;  // of the written file
};

// Reads and validates the checkpoint (read_checkpoint), picks the
// parameters (theta.* and model.param.*; every value with all_values),
// writes the file atomically: a new temporary file beside it (O_EXCL, so a
// planted link is never followed), fsync, rename, fsync of the folder. An
// output path that is a symbolic link or not a regular file is refused
// (FAILED_PRECONDITION). NOT_FOUND when the checkpoint holds no parameters.
ExportResult export_safetensors(const ExportOptions& options);

// `umlos export RUN_DIR -o FILE [--checkpoint FILE] [--all]` (arguments after
// "export"). Usage errors throw boost::program_options::error.
int cmd_export(const std::vector<std::string>& args);

}  // namespace umlos
