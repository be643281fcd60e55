// replay_checkpoints.cpp — integrity and equality of a recorded run's
// checkpoints for `umlos replay --verify`.
#include "replay_checkpoints.hpp"

#include <filesystem>

#include "checkpoint.hpp"
#include "error.hpp"
#include "sha256.hpp"

namespace umlos {
namespace fs = std::filesystem;

size_t check_recorded_checkpoints(const std::string& run_dir, const Manifest& manifest) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  const std::vector<std::string> files = list_checkpoints(run_dir);
  for (const std::string& file : files) {
    const CheckpointData ck = read_checkpoint(file);
    if (ck.manifest_hash != manifest.manifest_hash) {
      throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + file + "': field 'manifest_hash': expected " +
                                                  to_hex(manifest.manifest_hash) + " (this run's manifest), found " +
                                                  to_hex(ck.manifest_hash));
    }
    if (ck.replay_token != manifest.replay_token) {
      throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + file + "': field 'replay_token': expected " +
                                                  to_hex(manifest.replay_token) + " (this run's manifest), found " +
                                                  to_hex(ck.replay_token));
    }
  }
  if (fs::exists(dir / "latest", ec)) {
    const std::string latest = latest_checkpoint(run_dir);  // refuses a malformed pointer
    if (!fs::is_regular_file(latest, ec)) {
      throw Failure(UMLOS_NOT_FOUND, "'" + (dir / "latest").string() + "' names checkpoint '" + latest +
                                         "', which does not exist (deleted or never completed)");
    }
  }
  return files.size();
}

namespace {

std::string hex_or_none(const std::optional<Digest>& d) { return d ? to_hex(*d) : std::string("none"); }

std::string shape_text(const HostTensor& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (uint32_t i = 0; i < t.shape.rank && i < UMLOS_MAX_RANK; ++i) {
    s += (i ? "," : "") + std::to_string(t.shape.dims[i]);
  }
  return s + "]";
}

// "" when equal, else what differs first.
std::string first_difference(const CheckpointData& a, const CheckpointData& b) {
  auto field = [](const std::string& f, const std::string& x, const std::string& y) {
    return "field '" + f + "': recorded " + x + ", rerun " + y;
  };
  if (a.t != b.t) return field("t", std::to_string(a.t), std::to_string(b.t));
  if (a.manifest_hash != b.manifest_hash)
    return field("manifest_hash", to_hex(a.manifest_hash), to_hex(b.manifest_hash));
  if (a.modules.size() != b.modules.size()) {
    return field("modules", std::to_string(a.modules.size()), std::to_string(b.modules.size()));
  }
  for (size_t i = 0; i < a.modules.size(); ++i) {
    if (a.modules[i].name != b.modules[i].name || a.modules[i].sha256 != b.modules[i].sha256) {
      return field("modules[" + std::to_string(i) + "]", a.modules[i].name + " " + to_hex(a.modules[i].sha256),
                   b.modules[i].name + " " + to_hex(b.modules[i].sha256));
    }
  }
  size_t i = 0, j = 0;
  while (i < a.values.size() || j < b.values.size()) {
    if (j == b.values.size() || (i < a.values.size() && a.values[i].name < b.values[j].name)) {
      return "value '" + a.values[i].name + "': only in the recorded checkpoint";
    }
    if (i == a.values.size() || b.values[j].name < a.values[i].name) {
      return "value '" + b.values[j].name + "': only in the rerun's checkpoint";
    }
    const HostTensor &x = a.values[i].tensor, &y = b.values[j].tensor;
    const std::string& name = a.values[i].name;
    if (shape_text(x) != shape_text(y))
      return "value '" + name + "': recorded " + shape_text(x) + ", rerun " + shape_text(y);
    if (x.data != y.data) {
      size_t k = 0;
      while (k < x.data.size() && x.data[k] == y.data[k]) ++k;
      return "value '" + name + "' " + shape_text(x) + ": bytes differ from byte " + std::to_string(k) +
             " (SHA-256 recorded " + to_hex(sha256(x.data)) + ", rerun " + to_hex(sha256(y.data)) + ")";
    }
    ++i;
    ++j;
  }
  if (a.rng_key != b.rng_key || a.rng_offsets != b.rng_offsets) return "field 'rng': the RNG states differ";
  if (a.state_fp != b.state_fp) return field("state_fp", hex_or_none(a.state_fp), hex_or_none(b.state_fp));
  if (a.functional_fp != b.functional_fp) {
    return field("functional_fp", hex_or_none(a.functional_fp), hex_or_none(b.functional_fp));
  }
  if (a.tape.has_value() != b.tape.has_value()) {
    return field("tape", a.tape ? "a tape state" : "none", b.tape ? "a tape state" : "none");
  }
  if (a.tape && (a.tape->events != b.tape->events || a.tape->chain != b.tape->chain ||
                 a.tape->pending != b.tape->pending || a.tape->file_bytes != b.tape->file_bytes)) {
    return field("tape", std::to_string(a.tape->events) + " events, chain " + to_hex(a.tape->chain),
                 std::to_string(b.tape->events) + " events, chain " + to_hex(b.tape->chain));
  }
  return "";
}

}  // namespace

CheckpointComparison compare_checkpoints(const std::string& recorded_run_dir, const std::string& rerun_dir) {
  CheckpointComparison out;
  std::error_code ec;
  for (const std::string& file : list_checkpoints(recorded_run_dir)) {
    const fs::path name = fs::path(file).filename();
    const std::string other = (fs::path(rerun_dir) / "checkpoints" / name).string();
    if (!fs::is_regular_file(other, ec)) continue;
    const CheckpointData a = read_checkpoint(file), b = read_checkpoint(other);
    ++out.compared;
    const std::string d = first_difference(a, b);
    if (!d.empty()) {
      out.difference = name.string() + " (t=" + std::to_string(a.t) + "): " + d;
      return out;
    }
  }
  return out;
}

}  // namespace umlos
