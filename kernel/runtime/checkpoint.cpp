// checkpoint.cpp — encode, write, read, verify and restore checkpoints
// (spec 004 VIII; the schema is kernel/runtime/proto/checkpoint.proto).
#include "checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "checkpoint.pb.h"
#include "error.hpp"
#include "fsutil.hpp"

namespace umlos {
namespace fs = std::filesystem;

namespace {

std::string bytes_of(const Digest& d) { return std::string(reinterpret_cast<const char*>(d.data()), d.size()); }

std::string serialize_deterministic(const ckpt::Checkpoint& msg) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&cos);
    if (cos.HadError()) throw Failure(UMLOS_INTERNAL, "checkpoint: protobuf serialisation failed");
  }
  return out;
}

// "checkpoint 'FILE': field 'F': " — the prefix of every refusal.
std::string at(const std::string& label, const std::string& field) {
  return "checkpoint '" + label + "': field '" + field + "': ";
}

[[noreturn]] void refuse(const std::string& label, const std::string& field, const std::string& expected,
                         const std::string& found) {
  throw Failure(UMLOS_CHECKPOINT_INVALID, at(label, field) + "expected " + expected + ", found " + found);
}

Digest digest_field(const std::string& label, const std::string& field, const std::string& b) {
  if (b.size() != 32) refuse(label, field, "32 bytes (a SHA-256)", std::to_string(b.size()) + " bytes");
  Digest d{};
  std::memcpy(d.data(), b.data(), 32);
  return d;
}

std::optional<Digest> optional_digest(const std::string& label, const std::string& field, const std::string& b) {
  if (b.empty()) return std::nullopt;
  return digest_field(label, field, b);
}

std::string describe_shape(int32_t dtype, const std::vector<int64_t>& dims) {
  std::string s = dtype_name(dtype);
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// elements(dims) * element_bytes into `out`; false when a product
// overflows 64 bits (a zero extent anywhere gives 0 and true).
bool checked_byte_count(const std::vector<int64_t>& dims, uint64_t element_bytes, uint64_t& out) {
  for (int64_t d : dims) {
    if (d == 0) {
      out = 0;
      return true;
    }
  }
  uint64_t n = element_bytes;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  out = n;
  return true;
}

}  // namespace

std::vector<uint8_t> encode_checkpoint(const Manifest& manifest, const Host& host, const CheckpointExtras& extras) {
  CheckpointData d;
  d.format_version = kCheckpointFormatVersion;
  d.spec_version = manifest.spec_version;
  d.manifest_cbor = manifest.canonical_bytes;
  d.manifest_hash = manifest.manifest_hash;
  for (const LoadedModule& m : host.modules()) {
    d.modules.push_back(
        {m.desc && m.desc->name ? m.desc->name : "", m.desc && m.desc->version ? m.desc->version : "", m.sha256});
  }
  d.t = host.iteration();
  for (const std::string& name : host.persistent_value_names()) {  // sorted
    d.values.push_back({name, host.to_host(*host.values().at(name))});
  }
  d.rng_key = {host.rng().key()[0], host.rng().key()[1]};
  for (int32_t s = 0; s < UMLOS_STREAM_COUNT; ++s) d.rng_offsets[s] = host.rng().offset(s);
  d.policy_hash = manifest.policy_hash;
  d.env_manifest_hash = manifest.env_manifest_hash;
  d.replay_token = manifest.replay_token;
  d.backend_hash = host.driver_fingerprint();
  d.functional_fp = extras.functional_fp;
  d.state_fp = extras.state_fp;
  d.trace_bytes = extras.trace_bytes;
  d.tape = extras.tape;
  return encode_checkpoint_data(d);
}

std::vector<uint8_t> encode_checkpoint_data(const CheckpointData& d) {
  ckpt::Checkpoint msg;
  msg.set_format_version(d.format_version);
  msg.set_spec_version(d.spec_version);
  msg.set_manifest_cbor(std::string(d.manifest_cbor.begin(), d.manifest_cbor.end()));
  msg.set_manifest_hash(bytes_of(d.manifest_hash));
  for (const CheckpointModule& m : d.modules) {
    ckpt::Module* pm = msg.add_modules();
    pm->set_name(m.name);
    pm->set_version(m.version);
    pm->set_sha256(bytes_of(m.sha256));
  }
  msg.set_t(d.t);
  for (const CheckpointValue& cv : d.values) {
    const HostTensor& h = cv.tensor;
    ckpt::Value* v = msg.add_values();
    v->set_name(cv.name);
    v->set_dtype(h.dtype);
    for (uint32_t i = 0; i < h.shape.rank && i < UMLOS_MAX_RANK; ++i) v->add_shape(h.shape.dims[i]);
    v->set_data(std::string(h.data.begin(), h.data.end()));
  }
  ckpt::RngState* rng = msg.mutable_rng();
  rng->set_key0(d.rng_key[0]);
  rng->set_key1(d.rng_key[1]);
  for (int32_t s = 0; s < UMLOS_STREAM_COUNT; ++s) rng->add_offsets(d.rng_offsets[s]);
  msg.set_policy_hash(bytes_of(d.policy_hash));
  msg.set_env_manifest_hash(bytes_of(d.env_manifest_hash));
  msg.set_replay_token(bytes_of(d.replay_token));
  msg.set_backend_hash(bytes_of(d.backend_hash));
  if (d.functional_fp) msg.set_functional_fp(bytes_of(*d.functional_fp));
  if (d.state_fp) msg.set_state_fp(bytes_of(*d.state_fp));
  msg.set_trace_bytes(d.trace_bytes);
  if (d.tape) {
    ckpt::TapeState* tp = msg.mutable_tape();
    tp->set_events(d.tape->events);
    tp->set_chain_digest(bytes_of(d.tape->chain));
    tp->set_pending(std::string(d.tape->pending.begin(), d.tape->pending.end()));
    tp->set_file_bytes(d.tape->file_bytes);
  }
  if (msg.ByteSizeLong() + 64 > static_cast<size_t>(INT32_MAX)) {
    throw Failure(UMLOS_RESOURCE_EXHAUSTED, "checkpoint at t=" + std::to_string(d.t) + " would hold " +
                                                std::to_string(msg.ByteSizeLong()) +
                                                " bytes; a protobuf message holds at most 2 GiB");
  }
  const std::string body = serialize_deterministic(msg);
  msg.set_content_sha256(bytes_of(sha256(body)));
  const std::string all = serialize_deterministic(msg);
  return std::vector<uint8_t>(all.begin(), all.end());
}

std::string write_checkpoint(const std::string& run_dir, const Manifest& manifest, const Host& host,
                             const CheckpointExtras& extras) {
  if (host.iteration() < 0 || host.iteration() > 99999999) {
    throw Failure(UMLOS_OUT_OF_RANGE, "checkpoint: t=" + std::to_string(host.iteration()) +
                                          " does not fit the 8-digit file name ckpt_<t>.pb");
  }
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Failure(UMLOS_IO_ERROR, "cannot create checkpoint folder '" + dir.string() + "': " + ec.message());
  char name[32];
  std::snprintf(name, sizeof name, "ckpt_%08lld.pb", static_cast<long long>(host.iteration()));
  const std::string file = (dir / name).string();
  write_file_atomic(file, encode_checkpoint(manifest, host, extras));
  write_file_atomic((dir / "latest").string(), std::string(name) + "\n");
  return file;
}

CheckpointData decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& label) {
  ckpt::Checkpoint msg;
  if (bytes.empty()) refuse(label, "(file)", "a Checkpoint message", "an empty file");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    refuse(label, "(file)", "at most 2 GiB (the protobuf message limit)", std::to_string(bytes.size()) + " bytes");
  }
  bool parsed;
  {
    // libprotobuf logs its own line on stderr for some malformed input
    // (invalid UTF-8 in a string field); the refusal below says it all.
    struct Quiet {
      google::protobuf::LogHandler* old =
          google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
      ~Quiet() { google::protobuf::SetLogHandler(old); }
    } quiet;
    parsed = msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  if (!parsed) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + label + "': not a valid Checkpoint protobuf message (" +
                                                std::to_string(bytes.size()) +
                                                " bytes; truncated or corrupt, kernel/runtime/proto/checkpoint.proto)");
  }
  if (msg.content_sha256().empty()) {
    refuse(label, "content_sha256", "a SHA-256 (the last field of the file)",
           "none (the file is truncated or was not written by umlos)");
  }
  const Digest stored = digest_field(label, "content_sha256", msg.content_sha256());
  msg.clear_content_sha256();
  const std::string body = serialize_deterministic(msg);
  const Digest actual = sha256(body);
  if (actual != stored) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, at(label, "content_sha256") + "the file records " + to_hex(stored) +
                                                " but its content hashes to " + to_hex(actual) +
                                                " (corrupt or edited)");
  }
  // The file must be the deterministic serialisation itself (no other
  // encoding of the same content), so equal checkpoints are equal files.
  msg.set_content_sha256(bytes_of(stored));
  const std::string again = serialize_deterministic(msg);
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + label +
                                                "': not in deterministic protobuf encoding (the content is intact "
                                                "but the bytes are not those umlos writes)");
  }
  msg.clear_content_sha256();
  if (msg.format_version() != kCheckpointFormatVersion) {
    refuse(label, "format_version", std::to_string(kCheckpointFormatVersion), std::to_string(msg.format_version()));
  }
  CheckpointData d;
  d.file = label;
  d.format_version = msg.format_version();
  d.spec_version = msg.spec_version();
  d.manifest_cbor.assign(msg.manifest_cbor().begin(), msg.manifest_cbor().end());
  d.manifest_hash = digest_field(label, "manifest_hash", msg.manifest_hash());
  if (sha256(d.manifest_cbor) != d.manifest_hash) {
    refuse(label, "manifest_hash", "SHA-256(manifest_cbor) = " + to_hex(sha256(d.manifest_cbor)),
           to_hex(d.manifest_hash));
  }
  for (int i = 0; i < msg.modules_size(); ++i) {
    const ckpt::Module& m = msg.modules(i);
    d.modules.push_back(
        {m.name(), m.version(), digest_field(label, "modules[" + std::to_string(i) + "].sha256", m.sha256())});
  }
  d.t = msg.t();
  if (d.t < 0) refuse(label, "t", "t >= 0", std::to_string(d.t));
  for (int i = 0; i < msg.values_size(); ++i) {
    const ckpt::Value& v = msg.values(i);
    const std::string f = "values[" + std::to_string(i) + "]";
    if (v.name().empty()) refuse(label, f + ".name", "a value name", "\"\"");
    if (i > 0 && !(msg.values(i - 1).name() < v.name())) {
      refuse(label, f + ".name", "names in strictly ascending order (after '" + msg.values(i - 1).name() + "')",
             "'" + v.name() + "'");
    }
    if (dtype_size(v.dtype()) == 0) refuse(label, f + ".dtype", "a umlos_dtype 1..7", std::to_string(v.dtype()));
    if (v.shape_size() > UMLOS_MAX_RANK) {
      refuse(label, f + ".shape", "rank <= " + std::to_string(UMLOS_MAX_RANK), std::to_string(v.shape_size()));
    }
    CheckpointValue cv;
    cv.name = v.name();
    cv.tensor.dtype = v.dtype();
    cv.tensor.shape.rank = static_cast<uint32_t>(v.shape_size());
    std::vector<int64_t> dims(v.shape().begin(), v.shape().end());
    for (int k = 0; k < v.shape_size(); ++k) {
      if (dims[k] < 0) refuse(label, f + ".shape", "extents >= 0", describe_shape(v.dtype(), dims));
      cv.tensor.shape.dims[k] = dims[k];
    }
    // The byte count with every product checked: extents whose product
    // wraps 64 bits (e.g. [2^62, 2^62, 16]) must not pass as a small or
    // empty tensor. A zero extent makes any product of the others harmless.
    uint64_t want = 0;
    if (!checked_byte_count(dims, dtype_size(v.dtype()), want)) {
      refuse(label, f + ".shape", "extents whose product times the dtype size fits 64 bits for '" + v.name() + "'",
             describe_shape(v.dtype(), dims));
    }
    if (want != v.data().size()) {
      refuse(label, f + ".data",
             std::to_string(want) + " bytes for '" + v.name() + "' " + describe_shape(v.dtype(), dims),
             std::to_string(v.data().size()) + " bytes");
    }
    cv.tensor.data.assign(v.data().begin(), v.data().end());
    d.values.push_back(std::move(cv));
  }
  if (!msg.has_rng()) refuse(label, "rng", "the RNG state", "none");
  if (msg.rng().offsets_size() != UMLOS_STREAM_COUNT) {
    refuse(label, "rng.offsets", std::to_string(UMLOS_STREAM_COUNT) + " stream offsets",
           std::to_string(msg.rng().offsets_size()));
  }
  d.rng_key = {msg.rng().key0(), msg.rng().key1()};
  for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) d.rng_offsets[s] = msg.rng().offsets(s);
  d.policy_hash = digest_field(label, "policy_hash", msg.policy_hash());
  d.env_manifest_hash = digest_field(label, "env_manifest_hash", msg.env_manifest_hash());
  d.replay_token = digest_field(label, "replay_token", msg.replay_token());
  d.backend_hash = digest_field(label, "backend_hash", msg.backend_hash());
  d.functional_fp = optional_digest(label, "functional_fp", msg.functional_fp());
  d.state_fp = optional_digest(label, "state_fp", msg.state_fp());
  d.trace_bytes = msg.trace_bytes();
  if (msg.has_tape()) {
    const ckpt::TapeState& tp = msg.tape();
    TapeState ts;
    ts.events = tp.events();
    ts.chain = digest_field(label, "tape.chain_digest", tp.chain_digest());
    ts.pending.assign(tp.pending().begin(), tp.pending().end());
    ts.file_bytes = tp.file_bytes();
    if (ts.events > kTapeMaxEvents) {
      refuse(label, "tape.events", "at most " + std::to_string(kTapeMaxEvents), std::to_string(ts.events));
    }
    const uint64_t want_pending = (ts.events % kTapeBlockSize) * kTapeEventBytes;
    if (ts.pending.size() != want_pending) {
      refuse(label, "tape.pending",
             std::to_string(want_pending) + " bytes (" + std::to_string(ts.events % kTapeBlockSize) +
                 " events of 64 bytes)",
             std::to_string(ts.pending.size()) + " bytes");
    }
    const uint64_t want_file = kTapeHeaderBytes + ts.events * kTapeEventBytes;
    if (ts.file_bytes != want_file) {
      refuse(label, "tape.file_bytes", std::to_string(want_file), std::to_string(ts.file_bytes));
    }
    d.tape = std::move(ts);
  }
  return d;
}

CheckpointData read_checkpoint(const std::string& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (!fs::exists(st)) {
    throw Failure(UMLOS_NOT_FOUND, "checkpoint '" + file + "' does not exist");
  }
  // Refused before reading: a FIFO or device would block or never end, and
  // a file over the protobuf limit would be read whole only to be refused.
  if (!fs::is_regular_file(st)) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + file + "': expected a regular file, found " +
                                                (fs::is_directory(st) ? "a folder" : "a FIFO, socket or device"));
  }
  const uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > static_cast<uintmax_t>(INT32_MAX)) {
    refuse(file, "(file)", "at most 2 GiB (the protobuf message limit)", std::to_string(size) + " bytes");
  }
  return decode_checkpoint(read_file(file), file);
}

std::string latest_checkpoint(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  const fs::path latest = dir / "latest";
  std::error_code ec;
  if (!fs::exists(latest, ec)) {
    throw Failure(UMLOS_NOT_FOUND,
                  "no checkpoint in run folder '" + run_dir + "': '" + latest.string() + "' does not exist");
  }
  std::string name = read_text_file(latest.string());
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  if (name.size() != 16 || name.rfind("ckpt_", 0) != 0 || name.substr(13) != ".pb" ||
      !std::all_of(name.begin() + 5, name.begin() + 13, [](char c) { return c >= '0' && c <= '9'; })) {
    throw Failure(UMLOS_CHECKPOINT_INVALID,
                  "'" + latest.string() + "': expected one line 'ckpt_<8 digits>.pb', found '" + name + "'");
  }
  return (dir / name).string();
}

namespace {
bool is_checkpoint_name(const std::string& n) {
  return n.size() == 16 && n.rfind("ckpt_", 0) == 0 && n.substr(13) == ".pb" &&
         std::all_of(n.begin() + 5, n.begin() + 13, [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

std::vector<std::string> list_checkpoints(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::vector<std::string> names;  // ckpt_<8 digits>.pb sort by t
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (is_checkpoint_name(n) && e.is_regular_file(ec)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& n : names) out.push_back((dir / n).string());
  return out;
}

size_t prune_checkpoints(const std::string& run_dir, size_t keep) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  const std::string newest = fs::path(latest_checkpoint(run_dir)).filename().string();
  std::vector<std::string> names;  // ckpt_<8 digits>.pb sort by t
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 16 && n.rfind("ckpt_", 0) == 0 && n.substr(13) == ".pb") names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  size_t removed = 0;
  for (size_t i = 0; i + keep < names.size(); ++i) {
    if (names[i] == newest) continue;
    if (!fs::remove(dir / names[i], ec) || ec) {
      throw Failure(UMLOS_IO_ERROR, "cannot remove old checkpoint '" + (dir / names[i]).string() + "'" +
                                        (ec ? ": " + ec.message() : std::string()));
    }
    ++removed;
  }
  return removed;
}

void verify_checkpoint(const CheckpointData& ck, const Manifest& manifest, const Host& host,
                       const RestoreOptions& options) {
  const std::string& label = ck.file.empty() ? std::string("(memory)") : ck.file;
  const std::string run = " (this run: " + manifest.file + ")";
  if (ck.manifest_cbor != manifest.canonical_bytes) {
    size_t i = 0;
    const size_t n = std::min(ck.manifest_cbor.size(), manifest.canonical_bytes.size());
    while (i < n && ck.manifest_cbor[i] == manifest.canonical_bytes[i]) ++i;
    throw Failure(UMLOS_CHECKPOINT_INVALID,
                  at(label, "manifest_cbor") + "expected the canonical manifest of this run, " + manifest.file + " (" +
                      std::to_string(manifest.canonical_bytes.size()) + " bytes, manifest_hash " +
                      to_hex(manifest.manifest_hash) + "), found " + std::to_string(ck.manifest_cbor.size()) +
                      " bytes with manifest_hash " + to_hex(ck.manifest_hash) + ", first difference at byte " +
                      std::to_string(i) + ": the checkpoint belongs to another run");
  }
  if (ck.spec_version != manifest.spec_version) {
    refuse(label, "spec_version", "'" + manifest.spec_version + "'" + run, "'" + ck.spec_version + "'");
  }
  if (ck.policy_hash != manifest.policy_hash) {
    refuse(label, "policy_hash", to_hex(manifest.policy_hash) + run, to_hex(ck.policy_hash));
  }
  if (ck.env_manifest_hash != manifest.env_manifest_hash) {
    refuse(label, "env_manifest_hash", to_hex(manifest.env_manifest_hash) + run, to_hex(ck.env_manifest_hash));
  }
  if (ck.replay_token != manifest.replay_token) {
    refuse(label, "replay_token", to_hex(manifest.replay_token) + run, to_hex(ck.replay_token));
  }
  const std::vector<LoadedModule>& mods = host.modules();
  if (ck.modules.size() != mods.size()) {
    refuse(label, "modules", std::to_string(mods.size()) + " loaded modules" + run, std::to_string(ck.modules.size()));
  }
  for (size_t i = 0; i < mods.size(); ++i) {
    const std::string name = mods[i].desc && mods[i].desc->name ? mods[i].desc->name : "";
    const std::string f = "modules[" + std::to_string(i) + "]";
    if (ck.modules[i].name != name) refuse(label, f + ".name", "'" + name + "'" + run, "'" + ck.modules[i].name + "'");
    if (ck.modules[i].sha256 != mods[i].sha256) {
      refuse(label, f + ".sha256", to_hex(mods[i].sha256) + " (module '" + name + "' loaded from " + mods[i].path + ")",
             to_hex(ck.modules[i].sha256));
    }
  }
  if (options.require_same_backend && ck.backend_hash != host.driver_fingerprint()) {
    refuse(label, "backend_hash",
           to_hex(host.driver_fingerprint()) + " (the active driver: " + host.driver_description() + ")",
           to_hex(ck.backend_hash));
  }
}

namespace {

bool decl_name_matches(const char* decl, const std::string& name) {
  if (!decl) return false;
  const size_t n = std::strlen(decl);
  if (n >= 2 && decl[n - 2] == '.' && decl[n - 1] == '*') return name.compare(0, n - 1, decl, n - 1) == 0;
  return name == decl;
}

bool decl_admits(const umlos_value_decl& d, const HostTensor& t) {
  if (d.dtype != UMLOS_DTYPE_ANY && d.dtype != t.dtype) return false;
  if (d.rank == UMLOS_RANK_ANY) return true;
  if (d.rank != t.shape.rank) return false;
  for (uint32_t i = 0; i < d.rank && i < UMLOS_MAX_RANK; ++i) {
    if (d.dims[i] != UMLOS_DIM_ANY && d.dims[i] != t.shape.dims[i]) return false;
  }
  return true;
}

std::string describe_decl(const umlos_value_decl& d) {
  std::string s = d.dtype == UMLOS_DTYPE_ANY ? "any dtype" : dtype_name(d.dtype);
  if (d.rank == UMLOS_RANK_ANY) return s + " of any shape";
  s += "[";
  for (uint32_t i = 0; i < d.rank && i < UMLOS_MAX_RANK; ++i) {
    s += (i ? "," : "") + (d.dims[i] == UMLOS_DIM_ANY ? std::string("*") : std::to_string(d.dims[i]));
  }
  return s + "]";
}

std::string describe_tensor(const HostTensor& t) {
  std::vector<int64_t> dims(t.shape.dims, t.shape.dims + std::min<uint32_t>(t.shape.rank, UMLOS_MAX_RANK));
  return describe_shape(t.dtype, dims);
}

std::string describe_tensor(const Tensor& t) {
  HostTensor h;
  h.dtype = t.dtype;
  h.shape = t.shape;
  return describe_tensor(h);
}

bool same_layout(const HostTensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.shape.rank != b.shape.rank) return false;
  for (uint32_t i = 0; i < a.shape.rank && i < UMLOS_MAX_RANK; ++i) {
    if (a.shape.dims[i] != b.shape.dims[i]) return false;
  }
  return true;
}

// A restored value must be one the run's operators could have written
// (spec 004 VIII.B: a checkpoint is run state, and run state is what the
// operators declare PERSISTENT), and it must have the dtype and shape the
// run's bootstrap gave it when bootstrap made it: operators keep the layout
// of a persistent value for the whole run (docs/checkpoint.md, "Restore
// validation"). Checked before any tensor is made, so no operator ever sees
// a value of another layout; the content hash says only that the file is
// intact, not that its writer was umlos.
void validate_values(const CheckpointData& ck, const Host& host) {
  const std::string& label = ck.file.empty() ? std::string("(memory)") : ck.file;
  for (const CheckpointValue& v : ck.values) {
    const std::string found = describe_tensor(v.tensor);
    std::string declared;
    bool any_decl = false, admitted = false;
    for (const LoadedModule& m : host.modules()) {
      if (!m.desc || !m.desc->operators) continue;
      for (uint32_t i = 0; i < m.desc->n_operators; ++i) {
        const umlos_operator_desc* op = m.desc->operators[i];
        if (!op || !op->outputs) continue;
        for (uint32_t j = 0; j < op->n_outputs; ++j) {
          const umlos_value_decl& d = op->outputs[j];
          if (!(d.flags & UMLOS_VALUE_PERSISTENT) || !decl_name_matches(d.name, v.name)) continue;
          any_decl = true;
          if (decl_admits(d, v.tensor))
            admitted = true;
          else if (declared.size() < 400)
            declared +=
                (declared.empty() ? "" : " or ") + describe_decl(d) + " (" + op->name + " output '" + d.name + "')";
        }
      }
    }
    if (any_decl && !admitted) {
      throw Failure(UMLOS_CHECKPOINT_INVALID,
                    "checkpoint '" + label + "': value '" + v.name + "': expected " + declared + ", found " + found);
    }
    auto it = host.values().find(v.name);
    if (it != host.values().end() && it->second && host.is_persistent(v.name) && !same_layout(v.tensor, *it->second)) {
      throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint '" + label + "': value '" + v.name + "': expected " +
                                                  describe_tensor(*it->second) +
                                                  " (the layout this run's bootstrap gave it), found " + found);
    }
  }
}

}  // namespace

void restore_into(Host& host, const CheckpointData& ck, const Manifest& manifest, const RestoreOptions& options) {
  verify_checkpoint(ck, manifest, host, options);
  validate_values(ck, host);
  // Allocate every tensor first: a failure leaves the host as it was.
  std::vector<std::pair<std::string, TensorPtr>> fresh;
  fresh.reserve(ck.values.size());
  for (const CheckpointValue& v : ck.values) fresh.emplace_back(v.name, host.from_host(v.tensor));
  std::vector<std::pair<std::string, std::pair<TensorPtr, bool>>> before;
  for (const auto& [name, t] : host.values()) before.push_back({name, {t, host.is_persistent(name)}});
  for (const std::string& name : host.persistent_value_names()) {
    bool kept =
        std::any_of(ck.values.begin(), ck.values.end(), [&](const CheckpointValue& v) { return v.name == name; });
    if (!kept) host.erase_value(name);
  }
  for (auto& [name, t] : fresh) host.set_value(name, std::move(t), true);
  // The modules' own checks of the restored state (relations between
  // values no declaration can state, e.g. an optimiser moment has its
  // parameter's shape): UMLOS_CHECK_AFTER_RESTORE invariants, before any
  // operator runs. A refusal puts the values back as they were.
  try {
    host.run_invariants(UMLOS_CHECK_AFTER_RESTORE);
  } catch (const Failure& f) {
    host.clear_values();
    for (auto& [name, tp] : before) host.set_value(name, tp.first, tp.second);
    throw Failure(UMLOS_CHECKPOINT_INVALID,
                  "checkpoint '" + (ck.file.empty() ? std::string("(memory)") : ck.file) + "': " + f.what());
  }
  host.rng().set_key(ck.rng_key[0], ck.rng_key[1]);
  for (int32_t s = 0; s < UMLOS_STREAM_COUNT; ++s) host.rng().set_offset(s, ck.rng_offsets[s]);
  host.set_iteration(ck.t);
}

namespace {
// "; the previous valid checkpoint is ...: umlos run --resume ... --resume-from ...",
// or "; no older checkpoint ...". `failed` is the file that was refused
// ("" when `latest` itself was). Only checkpoints older than the refused
// one are offered; each is decoded and checked against this run (not
// restored).
std::string previous_checkpoint_offer(const std::string& run_dir, const std::string& failed, const Manifest& manifest,
                                      const Host& host, bool need_tape) {
  std::vector<std::string> all = list_checkpoints(run_dir);
  const std::string failed_name = failed.empty() ? std::string() : fs::path(failed).filename().string();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const std::string name = fs::path(*it).filename().string();
    if (!failed_name.empty() && name >= failed_name) continue;
    try {
      CheckpointData prev = read_checkpoint(*it);
      verify_checkpoint(prev, manifest, host);
      if (need_tape && !prev.tape) continue;
      return "; the previous valid checkpoint is '" + *it + "' (t=" + std::to_string(prev.t) +
             "); to continue from it: umlos run --resume '" + run_dir + "' --resume-from '" + *it + "'";
    } catch (const Failure&) {
      continue;
    }
  }
  return "; no older valid checkpoint in '" + (fs::path(run_dir) / "checkpoints").string() + "'";
}
}  // namespace

CheckpointData resume_from_checkpoint(Host& host, const Manifest& manifest, const std::string& run_dir,
                                      TapeWriter* tape, const std::string& checkpoint_file,
                                      const RestoreOptions& options) {
  std::string file;
  CheckpointData ck;
  try {
    file = checkpoint_file.empty() ? latest_checkpoint(run_dir) : checkpoint_file;
    ck = read_checkpoint(file);
    if (tape && !ck.tape) {
      throw Failure(UMLOS_CHECKPOINT_INVALID, at(file, "tape") + "expected the tape state (the run keeps " +
                                                  (fs::path(run_dir) / "tape.bin").string() + "), found none");
    }
    restore_into(host, ck, manifest, options);
  } catch (const Failure& f) {
    if (!checkpoint_file.empty()) throw;
    throw Failure(f.code(),
                  std::string(f.what()) + previous_checkpoint_offer(run_dir, file, manifest, host, tape != nullptr));
  }
  if (tape) tape->resume((fs::path(run_dir) / "tape.bin").string(), *ck.tape);
  truncate_trace((fs::path(run_dir) / "trace.jsonl").string(), ck.trace_bytes);
  return ck;
}

void truncate_trace(const std::string& trace_file, uint64_t bytes) {
  std::error_code ec;
  if (!fs::exists(trace_file, ec)) {
    throw Failure(UMLOS_NOT_FOUND, "trace '" + trace_file + "' does not exist (resume needs the run's trace)");
  }
  const uint64_t size = fs::file_size(trace_file, ec);
  if (ec) throw Failure(UMLOS_IO_ERROR, "cannot stat trace '" + trace_file + "': " + ec.message());
  if (size < bytes) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "trace '" + trace_file +
                                                "': field 'trace_bytes': the checkpoint expects at least " +
                                                std::to_string(bytes) + " bytes, the file has " + std::to_string(size));
  }
  int fd = ::open(trace_file.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);  // never through a link
  if (fd < 0) throw Failure(UMLOS_IO_ERROR, "cannot open trace '" + trace_file + "': " + std::strerror(errno));
  if (bytes > 0) {
    char last = 0;
    if (::pread(fd, &last, 1, static_cast<off_t>(bytes - 1)) != 1 || last != '\n') {
      ::close(fd);
      throw Failure(UMLOS_CHECKPOINT_INVALID, "trace '" + trace_file + "': field 'trace_bytes': byte " +
                                                  std::to_string(bytes - 1) +
                                                  " must end a record (a newline), found another byte");
    }
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0 || ::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    throw Failure(UMLOS_IO_ERROR, "cannot truncate trace '" + trace_file + "': " + std::strerror(e));
  }
  ::close(fd);
}

}  // namespace umlos
