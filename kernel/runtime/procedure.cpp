// procedure.cpp — bootstrap, the VI loop, trace records, failure records.
#include "procedure.hpp"

#include <sched.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "checkpoint.hpp"
#include "crash_record.hpp"
#include "dataset.hpp"
#include "digest_worker.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "job_folder.hpp"
#include "plan/plan_output.hpp"
#include "run_folder.hpp"
#include "tape.hpp"
#include "trace_writer.hpp"
#include "value_arenas.hpp"
#include "value_decls.hpp"
#include "wiring.hpp"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Spec 004 0.D: the fixed action order; `action` values index it.
const std::array<const char*, 4> kActions = {"optimize", "probe", "switch", "augment"};
const std::array<const char*, 4> kActionRoles = {"update_op", "probe_op", "switch_op", "augment_op"};

std::string json_hex(const Digest& d) { return to_hex(d); }

std::optional<double> scalar_f64(const Host& host, const std::string& name) {
  const TensorPtr value = host.find_value(name);
  if (!value) return std::nullopt;
  const Tensor& t = *value;
  if (element_count(t.shape) != 1) return std::nullopt;
  if (t.dtype == UMLOS_DTYPE_F64) {
    double v;
    host.read(t, &v, 8);
    return v;
  }
  if (t.dtype == UMLOS_DTYPE_F32) {
    float v;
    host.read(t, &v, 4);
    return static_cast<double>(v);
  }
  return std::nullopt;
}

// One scalar element of type T, as int64 (a u64 above INT64_MAX wraps).
template <class T>
int64_t read_scalar_as_int(const Host& host, const Tensor& t) {
  T v;
  host.read(t, &v, sizeof v);
  return static_cast<int64_t>(v);
}

std::optional<int64_t> scalar_int(const Host& host, const std::string& name) {
  const TensorPtr value = host.find_value(name);
  if (!value) return std::nullopt;
  const Tensor& t = *value;
  if (element_count(t.shape) != 1) return std::nullopt;
  switch (t.dtype) {
    case UMLOS_DTYPE_I64:
      return read_scalar_as_int<int64_t>(host, t);
    case UMLOS_DTYPE_I32:
      return read_scalar_as_int<int32_t>(host, t);
    case UMLOS_DTYPE_U8:
      return read_scalar_as_int<uint8_t>(host, t);
    case UMLOS_DTYPE_U32:
      return read_scalar_as_int<uint32_t>(host, t);
    case UMLOS_DTYPE_U64:
      return read_scalar_as_int<uint64_t>(host, t);
    default:
      return std::nullopt;
  }
}

// Operators add fields to the iteration's trace record by writing values
// named trace.<field> (u8 text: a JSON object or array is embedded as JSON,
// anything else as a string; an f64/i64 scalar as a number). They describe
// this iteration only, so the kernel removes them once logged: they never
// reach a checkpoint or a fingerprint.
void take_trace_fields(Host& host, json& record) {
  const ValueStore::Map& values = host.values();
  std::vector<std::string> taken;
  for (auto v = values.lower_bound("trace."); v != values.end() && v->first.rfind("trace.", 0) == 0; ++v) {
    const std::string field = v->first.substr(6);
    const Tensor& t = *v->second;
    if (t.dtype == UMLOS_DTYPE_U8) {
      std::string text(t.bytes, '\0');
      if (t.bytes) host.read(t, text.data(), t.bytes);
      json parsed = json::parse(text, nullptr, false);
      record[field] = (!parsed.is_discarded() && (parsed.is_object() || parsed.is_array())) ? parsed : json(text);
    } else if (std::optional<double> f = scalar_f64(host, v->first)) {
      record[field] = *f;
    } else if (std::optional<int64_t> i = scalar_int(host, v->first)) {
      record[field] = *i;
    }
    taken.push_back(v->first);
  }
  for (const std::string& name : taken) host.erase_value(name);
}

std::optional<Digest> digest_value(const Host& host, const std::string& name) {
  const TensorPtr value = host.find_value(name);
  if (!value) return std::nullopt;
  const Tensor& t = *value;
  if (t.dtype != UMLOS_DTYPE_U8 || t.bytes != 32) {
    throw Failure(UMLOS_CONTRACT_VIOLATION, "value '" + name + "' must be u8[32] (a SHA-256), found " +
                                                std::string(dtype_name(t.dtype)) + shape_string(t.shape));
  }
  Digest d{};
  host.read(t, d.data(), 32);
  return d;
}

// The kernel's own state fingerprint, used when the manifest names no
// state_fingerprint_op: SHA-256 over t, every persistent value (sorted by
// name: name, dtype, shape, bytes) and the RNG key and stream offsets.
Digest generic_state_fingerprint(const Host& host) {
  Sha256 h;
  h.update(std::string_view("UML_OS.Kernel.StateFingerprint"));
  h.update_u64_be(static_cast<uint64_t>(host.iteration()));
  for (const std::string& name : host.persistent_value_names()) {
    const Tensor& t = *host.values().at(name);
    h.update_u64_be(name.size());
    h.update(name);
    h.update_u64_be(static_cast<uint64_t>(t.dtype));
    h.update_u64_be(t.shape.rank);
    for (uint32_t i = 0; i < t.shape.rank; ++i) h.update_u64_be(static_cast<uint64_t>(t.shape.dims[i]));
    HostTensor ht = host.to_host(t);
    h.update_u64_be(ht.data.size());
    h.update(ht.data.data(), ht.data.size());
  }
  h.update(host.rng().fingerprint());
  return h.finish();
}

// What the RNG master key is derived from: the canonical manifest without
// its execution environment (`driver`, `modules`), so that the random values
// of a run depend on the experiment and its seed but not on which driver,
// how many driver threads, or which module build executes it
// (docs/spec-notes.md, 0.B).
Digest experiment_hash(const Manifest& m) {
  std::vector<std::pair<cbor::Value, cbor::Value>> kept;
  for (const auto& [k, v] : m.canonical.as_map()) {
    if (k.kind() == cbor::Value::Kind::Text && (k.as_text() == "driver" || k.as_text() == "modules")) continue;
    if (k.kind() == cbor::Value::Kind::Text && k.as_text() == "tmmu" && v.kind() == cbor::Value::Kind::Map) {
      // tmmu.values says where the run state is stored, never what is
      // computed: left out like the driver (docs/spec-notes.md).
      std::vector<std::pair<cbor::Value, cbor::Value>> tmmu;
      for (const auto& [tk, tv] : v.as_map()) {
        if (!(tk.kind() == cbor::Value::Kind::Text && tk.as_text() == "values")) tmmu.emplace_back(tk, tv);
      }
      kept.emplace_back(k, cbor::Value::map(std::move(tmmu)));
      continue;
    }
    kept.emplace_back(k, v);
  }
  return sha256(cbor::encode(cbor::Value::map(std::move(kept))));
}

std::string text_or(const cbor::Value& map, const char* key, const std::string& fallback) {
  const cbor::Value* v = map.find(key);
  return (v && v->kind() == cbor::Value::Kind::Text) ? v->as_text() : fallback;
}

// The progress line: on a terminal one line rewritten in place about five
// times a second (step, loss, held-out metric, steps/s, time left);
// otherwise a plain line every tenth of the run.
class Progress {
 public:
  explicit Progress(int64_t max_steps)
      : max_steps_(max_steps),
        tty_(::isatty(STDERR_FILENO) == 1),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}
  void update(int64_t t, std::optional<double> loss, const Host& host, bool final) {
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - start_).count();
    bool due;
    if (tty_)
      due = final || std::chrono::duration<double>(now - last_).count() >= 0.2;
    else
      due = final || t % std::max<int64_t>(1, max_steps_ / 10) == 0;
    if (!due || (final && !tty_ && printed_t_ == t)) return;
    last_ = now;
    printed_t_ = t;
    const double rate = secs > 0 ? static_cast<double>(t) / secs : 0.0;
    char metric[64] = "";
    if (std::optional<double> v = scalar_f64(host, "val_accuracy"))
      std::snprintf(metric, sizeof metric, "  val_acc %.4f", *v);
    else if (std::optional<double> r = scalar_f64(host, "val_r2"))
      std::snprintf(metric, sizeof metric, "  val_r2 %.4f", *r);
    const double left = rate > 0 && max_steps_ > t ? static_cast<double>(max_steps_ - t) / rate : 0.0;
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %s%s  %.1f steps/s  %s %.0fs", static_cast<long long>(t),
                  static_cast<long long>(max_steps_), loss ? std::to_string(*loss).c_str() : "-", metric, rate,
                  final ? "elapsed" : "left", final ? secs : left);
    if (tty_)
      std::fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
    else
      std::fprintf(stderr, "%s\n", line);
  }

 private:
  int64_t max_steps_;
  int64_t printed_t_ = -1;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

// What an iteration leaves to do once its state_fp is known: the rank
// barrier, the tape event and the iter record.
struct StepTail {
  int64_t t = 0;
  int64_t action = 0;
  bool fp_now = false;
  TapeEvent ev;                          // state_fp filled in when settled
  std::optional<nlohmann::json> record;  // built at t when the digest is deferred
};

struct RunState {
  const Manifest* manifest = nullptr;
  Host host;
  TraceWriter trace;
  std::string run_dir;
  // The run folder, held (locked) from bootstrap to exit; nothing is
  // written into a folder this process does not hold.
  RunFolder folder;
  bool fresh_folder = false;  // created (or found empty) by this run
  bool loop_started = false;
  bool replica = false;  // a rank other than 0 restored from rank 0's checkpoint
  std::string current_operator = "UML_OS.OS.Bootstrap_v1";
  std::optional<Digest> state_fp;
  std::optional<Digest> functional_fp;
  // StateFingerprint_v1 hashed on a second thread while the next step runs,
  // or in pairs of steps (may_defer_fingerprints): the worker, and the step
  // whose tail (rank barrier, tape event, iter record) waits for its digest.
  std::unique_ptr<DigestWorker> digests;
  std::optional<StepTail> pending;
  // Whether the worker holds a digest not yet settled.
  bool digest_in_flight() const { return digests && digests->busy(); }
  // The run state in planned arenas (tmmu.values: arenas); declared after
  // `host`, which it borrows, so it is destroyed first.
  std::unique_ptr<ValueArenas> value_arenas;
};

// ApplyPlan_v1 for the run state at an iteration boundary: replan when the
// layout changed, move values into their slots; RUN_DIR/value_arenas.json
// describes the plan in force after every replan and at the end.
void value_safepoint(RunState& rs) {
  if (!rs.value_arenas) return;
  rs.current_operator = "UML_OS.TMMU.ApplyPlan_v1";
  if (rs.value_arenas->safepoint().replanned) {
    rs.folder.write_atomic("value_arenas.json", rs.value_arenas->to_json());
  }
}

void put_scalar(Host& host, const std::string& name, double v) {
  HostTensor h;
  h.dtype = UMLOS_DTYPE_F64;
  h.shape.rank = 0;
  h.data.resize(8);
  std::memcpy(h.data.data(), &v, 8);
  host.put_value(name, host.from_host(h));
}

// QuotaEnforce_v1: the job folder's bytes against budgets.disk_bytes and the
// value store's bytes against budgets.memory_bytes (0 = unlimited);
// resource_util = the larger share. Over budget: QUOTA_EXCEEDED.
void enforce_quota(RunState& rs, uint64_t disk_budget, uint64_t memory_budget) {
  uint64_t disk = 0, memory = 0;
  std::error_code ec;
  // Each is measured only under a budget: without one nothing reads it
  // (resource_util stays 0), and the folder walk costs a stat per file.
  if (disk_budget > 0) {
    for (auto it = fs::recursive_directory_iterator(rs.run_dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      // Links are not the run's bytes (and are refused in a held folder).
      if (it->symlink_status(ec).type() == fs::file_type::regular) disk += it->file_size(ec);
    }
  }
  if (memory_budget > 0)
    for (const auto& [name, t] : rs.host.values()) memory += t->bytes;
  double util = 0.0;
  if (disk_budget > 0) util = std::max(util, static_cast<double>(disk) / static_cast<double>(disk_budget));
  if (memory_budget > 0) util = std::max(util, static_cast<double>(memory) / static_cast<double>(memory_budget));
  if (disk_budget > 0 && disk > disk_budget) {
    throw Failure(UMLOS_QUOTA_EXCEEDED, "the job folder " + rs.run_dir + " holds " + std::to_string(disk) +
                                            " bytes, over budgets.disk_bytes = " + std::to_string(disk_budget));
  }
  if (memory_budget > 0 && memory > memory_budget) {
    throw Failure(UMLOS_QUOTA_EXCEEDED,
                  "the run state holds " + std::to_string(memory) +
                      " bytes of values, over budgets.memory_bytes = " + std::to_string(memory_budget));
  }
  put_scalar(rs.host, "resource_util", util);
}

// --profile: where the wall-clock time went, per operator: the kernel's
// checks around the call, the module's own work, the driver's primitives;
// and per driver primitive (profile.json only).
void write_profile(RunState& rs, std::chrono::steady_clock::duration wall) {
  const Host::Profile& p = rs.host.profile();
  const double wall_s = std::chrono::duration<double>(wall).count();
  json ops = json::array();
  double in_ops = 0;
  std::fprintf(stderr, "\n%-40s %8s %10s %10s %10s %10s\n", "operator", "calls", "total s", "kernel s", "module s",
               "driver s");
  for (const auto& [name, e] : p.ops) {
    const double total = e.total_ns * 1e-9, body = e.body_ns * 1e-9, drv = e.driver_ns * 1e-9;
    in_ops += total;
    std::fprintf(stderr, "%-40s %8llu %10.3f %10.3f %10.3f %10.3f\n", name.c_str(),
                 static_cast<unsigned long long>(e.calls), total, total - body, body - drv, drv);
    ops.push_back({{"operator", name},
                   {"calls", e.calls},
                   {"total_s", total},
                   {"kernel_checks_s", total - body},
                   {"module_s", body - drv},
                   {"driver_s", drv},
                   {"memory_plans", e.plans},
                   {"largest_plan_bytes", e.plan_max_footprint},
                   {"largest_plan_unplanned_bytes", e.plan_max_unplanned}});
  }
  std::fprintf(stderr, "%-40s %8s %10.3f  (trace, quota, bootstrap outside operators)\n", "kernel outside operators",
               "", wall_s - in_ops);
  std::fprintf(stderr, "%-40s %8s %10.3f  (%llu primitive dispatches)\n", "run", "", wall_s,
               static_cast<unsigned long long>(p.dispatches));
  for (const auto& [name, e] : p.ops) {
    if (e.plans == 0) continue;
    std::fprintf(stderr, "memory plans of %s: %llu, the largest %llu bytes (one buffer per tensor: %llu)\n",
                 name.c_str(), static_cast<unsigned long long>(e.plans),
                 static_cast<unsigned long long>(e.plan_max_footprint),
                 static_cast<unsigned long long>(e.plan_max_unplanned));
  }
  json primitives = json::array();
  for (const auto& [name, e] : p.primitives)
    primitives.push_back({{"primitive", name}, {"dispatches", e.calls}, {"driver_s", e.ns * 1e-9}});
  const Device::CollectiveStats& cs = rs.host.device().collective_stats();
  if (rs.host.world_size() > 1) {
    std::fprintf(stderr, "collectives: %llu calls, %llu bytes sent by this rank, %.3f s in them\n",
                 static_cast<unsigned long long>(cs.calls), static_cast<unsigned long long>(cs.bytes_sent),
                 cs.ns * 1e-9);
  }
  json doc = {{"wall_s", wall_s},
              {"world_size", rs.host.world_size()},
              {"collectives", {{"calls", cs.calls}, {"bytes_sent", cs.bytes_sent}, {"s", cs.ns * 1e-9}}},
              {"kernel_outside_operators_s", wall_s - in_ops},
              {"state_fp_overlapped", rs.digests && rs.digests->mode() == DigestWorker::Mode::thread},
              {"state_fp_paired", rs.digests && rs.digests->mode() == DigestWorker::Mode::pairs},
              {"dispatches", p.dispatches},
              {"operators", ops},
              {"primitives", primitives}};
  rs.folder.write_atomic("profile.json", doc.dump(2) + "\n");
}

json failure_record(RunState& rs, const Failure& f) {
  json r;
  r["record"] = "failure";
  r["t"] = rs.host.iteration();
  r["failure_code"] = status_name(f.code());
  r["failure_operator"] = rs.current_operator;
  r["message"] = f.what();
  r["replay_token"] = rs.manifest ? json(json_hex(rs.manifest->replay_token)) : json(nullptr);
  r["rng_fingerprint_t"] = json_hex(rs.host.rng().fingerprint());
  r["state_fp_t"] = rs.state_fp ? json(json_hex(*rs.state_fp)) : json(nullptr);
  r["exit_status"] = exit_code_for(f.code());
  return r;
}

// The trace's closing record of a failed run (0.K).
void write_failed_run_end(RunState& rs, const Failure& f) {
  rs.trace.write({{"record", "run_end"},
                  {"status", "failed"},
                  {"t", rs.host.iteration()},
                  {"failure_code", status_name(f.code())},
                  {"failure_operator", rs.current_operator}});
}

// Every operator of `role`, in the manifest's order, each through its
// binding of declared names to run values.
void call_role(RunState& rs, const Roles& roles, const std::string& role) {
  for (const auto& e : roles.entries(role)) {
    rs.current_operator = e->op->name;
    rs.host.call_operator(e->op, &e->binding);
  }
}

// A run file's bytes, read through the held folder (never through a link).
std::vector<uint8_t> read_run_file(const RunFolder& folder, const std::string& name) {
  const int fd = folder.open_file(name, O_RDONLY);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Failure(UMLOS_IO_ERROR, "cannot read '" + folder.file(name) + "': " + std::strerror(err));
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

// One checkpoint of the run's state at the current t (spec 004 VIII), then
// retention: older files go only once the new one and `latest` are durable.
void write_run_checkpoint(RunState& rs, const Manifest& manifest, TapeWriter& tape, int64_t checkpoint_keep) {
  rs.current_operator = "UML_OS.OS.Checkpoint";
  CheckpointExtras x;
  x.state_fp = rs.state_fp;
  x.functional_fp = rs.functional_fp;
  x.trace_bytes = rs.trace.synced_bytes();
  x.tape = tape.state();
  write_checkpoint(rs.run_dir, manifest, rs.host, x);
  if (checkpoint_keep > 0) prune_checkpoints(rs.run_dir, static_cast<size_t>(checkpoint_keep));
}

}  // namespace

// What operators read through config_*: the manifest's `config:` map plus,
// read-only, `policy` (its rules), `datasets` and `model_ir` (docs/training.md).
cbor::Value operator_config(const Manifest& m) {
  std::vector<std::pair<cbor::Value, cbor::Value>> entries;
  for (const auto& [k, v] : m.config.as_map()) {
    if (k.kind() == cbor::Value::Kind::Text &&
        (k.as_text() == "policy" || k.as_text() == "datasets" || k.as_text() == "model_ir")) {
      throw Failure(UMLOS_MANIFEST_INVALID, m.where("config." + k.as_text()) + ": key 'config." + k.as_text() +
                                                "' is reserved: operators see the manifest's top-level '" +
                                                k.as_text() + "' under that name; move it to the top level");
    }
    entries.emplace_back(k, v);
  }
  entries.emplace_back(cbor::Value::text("policy"), m.policy);
  if (const cbor::Value* d = m.canonical.find("datasets")) entries.emplace_back(cbor::Value::text("datasets"), *d);
  if (!m.model_ir.is_null()) entries.emplace_back(cbor::Value::text("model_ir"), m.model_ir);
  return cbor::Value::map(std::move(entries));
}

namespace {

// What bootstrap fixes for the rest of the run.
struct Bootstrapped {
  std::string job_id;
  Roles roles;
  int64_t checkpoint_every = 0;  // --checkpoint-every, else config.checkpoint_every
  std::string backend_hash;
  std::optional<DatasetRecord> dataset;
  bool restart = false;          // a resume with no checkpoint: the run starts again at t = 0
  bool from_checkpoint = false;  // a resume from a checkpoint
};

// The manifest could not be read: no run folder yet, so the failure record
// goes to stderr only.
int manifest_failure(const Failure& f) {
  json r = {{"record", "failure"},
            {"t", 0},
            {"failure_code", status_name(f.code())},
            {"failure_operator", "UML_OS.OS.Bootstrap_v1"},
            {"message", f.what()},
            {"replay_token", nullptr},
            {"rng_fingerprint_t", nullptr},
            {"state_fp_t", nullptr},
            {"exit_status", exit_code_for(f.code())}};
  std::fprintf(stderr, "umlos: %s\n%s\n", f.what(), r.dump().c_str());
  return exit_code_for(f.code());
}

// A resumed run keeps the record of the failure it resumes from: the
// folder's failure.json becomes failure.1.json (failure.2.json, ... for
// later ones), never overwritten.
void keep_earlier_failure(const RunFolder& folder) {
  if (!folder.has("failure.json")) return;
  for (int k = 1; k < 100000; ++k)
    if (folder.rename_no_replace("failure.json", "failure." + std::to_string(k) + ".json")) return;
  throw Failure(UMLOS_RESOURCE_EXHAUSTED, "run folder '" + folder.path() + "' holds 100000 earlier failure records");
}

// Bootstrap_v1, NamespaceEnter_v1 / ResolvePath_v1: the run folder — --run-dir,
// else the job folder under UML_OS_ROOT/namespaces, each component a plain
// name, the result checked to stay inside the namespaces tree. A new run
// creates its folder (or takes an empty one) and a resume takes the run's
// own; either holds it locked until the process exits.
void enter_run_folder(RunState& rs, const Manifest& manifest, const RunOptions& options, const std::string& job_id) {
  if (!options.run_dir.empty()) {
    rs.run_dir = options.run_dir;
  } else {
    const cbor::Value* ns = manifest.canonical.find("namespace");
    cbor::Value empty = cbor::Value::map();
    const cbor::Value& n = ns ? *ns : empty;
    std::vector<std::pair<std::string, std::string>> parts = {{"org", text_or(n, "org", "default")},
                                                              {"unit", text_or(n, "unit", "default")},
                                                              {"project", text_or(n, "project", "default")},
                                                              {"experiment", text_or(n, "experiment", manifest.name)}};
    rs.run_dir = resolve_namespace_path(manifest, parts, job_id).string();
  }
  if (options.resume) {
    rs.folder.take_existing(rs.run_dir);
    keep_earlier_failure(rs.folder);
  } else if (!options.run_dir.empty()) {
    rs.folder.create(rs.run_dir);
    rs.fresh_folder = true;
  } else {
    create_next_job_folder(rs.folder, rs.run_dir);
    rs.fresh_folder = true;
  }
  rs.run_dir = rs.folder.path();
  // trace.path would put the trace outside the held run folder: refused
  // rather than ignored (docs/spec-notes.md).
  if (manifest.settings.trace_path) {
    throw Failure(UMLOS_UNIMPLEMENTED, manifest.where("trace.path") +
                                           ": key 'trace.path': the trace is always RUN_DIR/trace.jsonl of the "
                                           "run folder; choose the folder with --run-dir DIR and remove trace.path");
  }
}

// The manifest beside the trace. A resume of a run killed before its first
// checkpoint starts it again from t = 0 in its own folder (the bootstrap
// state is a function of the manifest, like a checkpoint at t = 0), once the
// folder's manifest copy shows the run is this manifest's. Returns whether
// the run restarts.
bool place_manifest_copies(RunState& rs, const Manifest& manifest, const RunOptions& options) {
  const bool restart = options.resume && options.resume_from.empty() && !rs.folder.has("checkpoints/latest");
  if (restart && rs.folder.has("manifest.cbor")) {
    const std::vector<uint8_t> copy = read_run_file(rs.folder, "manifest.cbor");
    if (copy != manifest.canonical_bytes) {
      throw Failure(UMLOS_CHECKPOINT_INVALID,
                    "run folder '" + rs.run_dir + "' has no checkpoint, and its manifest.cbor (manifest_hash " +
                        to_hex(sha256(copy)) + ") is not the canonical form of " + manifest.file + " (manifest_hash " +
                        to_hex(manifest.manifest_hash) + "): the folder holds another run");
    }
  }
  if (restart) {
    for (const char* f : {"trace.jsonl", "tape.bin", "value_arenas.json"}) rs.folder.remove_file(f);
  }
  // The exact manifest file beside the trace, for replay --verify (kept as
  // it is on resume: a refused resume must not replace the run's copy).
  // manifest.path first (where the manifest was read from; module and data
  // paths are relative to it): from then on `umlos run --resume RUN_DIR`
  // alone continues the run, whenever it is killed.
  if (!options.resume || (restart && !rs.folder.has("manifest.cbor"))) {
    if (!options.resume) {
      rs.folder.write_atomic("manifest.path", fs::absolute(manifest.file).lexically_normal().string() + "\n");
    }
    // The bytes that were parsed (not the file again, which may have
    // changed since); a pinned model IR file is saved beside it, exactly as
    // hashed, and the copy names it, so the folder alone replays.
    if (!manifest.model_ir_file.empty()) rs.folder.write_atomic("model_ir.yaml", manifest.model_ir_text);
    rs.folder.write_atomic("manifest.yaml", run_folder_manifest_text(manifest, "model_ir.yaml"));
    // Last: its presence says the copies are complete.
    rs.folder.write_atomic("manifest.cbor",
                           std::string(manifest.canonical_bytes.begin(), manifest.canonical_bytes.end()));
  }
  return restart;
}

// The host as the manifest sets it up before any module is loaded: the
// replay token, contract strictness, the RNG and the configuration modules
// read.
void configure_host(RunState& rs, const Manifest& manifest, const RunOptions& options) {
  rs.host.set_replay_token(manifest.replay_token);
  rs.host.set_strict_contracts(options.strict_contracts);
  rs.host.rng().seed_from_manifest(experiment_hash(manifest));
  rs.host.set_operator_config(operator_config(manifest));
  rs.host.set_driver_config(manifest.driver_config);
  rs.host.set_strategy_config(manifest.tmmu_config);
}

// LoadDeclaredModules_v1: manifest order, each verified against its pin.
void load_declared_modules(RunState& rs, const Manifest& manifest, const RunOptions& options) {
  if (!options.module_files.empty() && options.module_files.size() != manifest.modules.size())
    throw Failure(UMLOS_INTERNAL, "run options name " + std::to_string(options.module_files.size()) +
                                      " module files for the " + std::to_string(manifest.modules.size()) +
                                      " modules of '" + manifest.file + "'");
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const ModuleEntry& e = manifest.modules[i];
    rs.host.load(options.module_files.empty() ? e.resolved_path : options.module_files[i], e.sha256);
  }
}

// Every named operator resolved before step 1 (a missing one is a
// bootstrap failure, not a surprise at step 500), and the TMMU strategy.
Roles resolve_roles(RunState& rs, const Manifest& manifest) {
  Roles roles = Roles::resolve(rs.host, manifest, rs.host.operator_config());
  if (!manifest.tmmu_strategy.empty() && !rs.host.find_strategy(manifest.tmmu_strategy)) {
    throw Failure(UMLOS_OPERATOR_NOT_FOUND, manifest.where("tmmu.strategy") + ": key 'tmmu.strategy' names '" +
                                                manifest.tmmu_strategy + "', which no module of the manifest offers");
  }
  return roles;
}

// The active strategy, the memory budget and the per-call time limit.
void set_limits(RunState& rs, const Manifest& manifest) {
  if (!manifest.tmmu_strategy.empty()) {
    rs.host.set_active_strategy(manifest.tmmu_strategy);
    // The run's first memory plan, drawn (x = step, y = offset) for
    // `umlos report`: operators plan the same graph every iteration, so the
    // first plan is the one the run applies. Written once, atomically.
    rs.host.set_plan_observer(
        [&rs](const std::string& strategy, const umlos_plan_request& request, const umlos_plan_result& result) {
          if (rs.folder.has("memory_plan.svg")) return;
          plan::IntervalSet set;
          plan::PlanReport report;
          plan::from_request(request, result, strategy,
                             rs.current_operator + " at t " + std::to_string(rs.host.iteration()), set, report);
          rs.folder.write_atomic("memory_plan.svg", plan::to_svg(set, report));
        });
  }
  const RunSettings& s = manifest.settings;
  rs.host.set_memory_budget(s.memory_bytes, s.memory_bytes_is_default);
  if (s.op_timeout_s > 0) {
    // A call over the limit never returns, so the failure is recorded
    // from the watchdog's thread while the run's thread stays blocked in
    // the module: the same run_end record and failure.json as any failure.
    rs.host.set_call_timeout(static_cast<double>(s.op_timeout_s), [&rs](const std::string& message) {
      const Failure f(UMLOS_QUOTA_EXCEEDED, message);
      const json record = failure_record(rs, f);
      try {
        write_failed_run_end(rs, f);
        rs.trace.close();
        write_file_atomic((fs::path(rs.run_dir) / "failure.json").string(), record.dump(2) + "\n");
      } catch (const Failure& g) {
        std::fprintf(stderr, "umlos: could not write the failure record: %s\n", g.what());
      }
      std::fprintf(stderr, "%s\n", record.dump().c_str());
    });
  }
}

// backend_hash (spec 002 0.B): the driver's runtime fingerprint; with a
// fallback driver, SHA-256 of both (the fallback computes some results).
Digest backend_hash(const Host& host) {
  if (!host.fallback_driver()) return host.driver_fingerprint();
  Sha256 h;
  const Digest a = host.driver_fingerprint(), b = host.fallback_fingerprint();
  h.update(a.data(), a.size());
  h.update(b.data(), b.size());
  return h.finish();
}

// The manifest's driver, and the run state's arenas when a strategy places
// them (tmmu.values: arenas).
void start_driver(RunState& rs, const Manifest& manifest) {
  rs.host.activate_driver(manifest.driver_name);
  if (!manifest.driver_fallback.empty())
    rs.host.activate_fallback_driver(manifest.driver_fallback, manifest.driver_fallback_config);
  if (!manifest.tmmu_strategy.empty() && manifest.tmmu_values == "arenas") {
    rs.value_arenas = std::make_unique<ValueArenas>(rs.host);
    rs.host.set_value_arenas(rs.value_arenas.get());
  }
}

// The trace's first record (a resume continues the trace: no new header).
void write_run_header(RunState& rs, const Manifest& manifest, const Bootstrapped& b) {
  rs.trace.open(rs.folder);
  json modules = json::array();
  for (const LoadedModule& m : rs.host.modules()) {
    modules.push_back({{"name", m.desc->name},
                       {"version", m.desc->version ? m.desc->version : ""},
                       {"sha256", to_hex(m.sha256)},
                       {"abi", std::to_string(m.desc->abi_major) + "." + std::to_string(m.desc->abi_minor)}});
  }
  json roles_json = json::object();
  for (const auto& [role, names] : b.roles.names())
    roles_json[role] = names.size() == 1 ? json(names.front()) : json(names);
  const std::optional<DatasetRecord>& dataset = b.dataset;
  json header = {{"record", "run_header"},
                 {"spec_version", manifest.spec_version},
                 {"name", manifest.name},
                 {"manifest_hash", json_hex(manifest.manifest_hash)},
                 {"policy_hash", json_hex(manifest.policy_hash)},
                 {"env_manifest_hash", json_hex(manifest.env_manifest_hash)},
                 {"replay_token", json_hex(manifest.replay_token)},
                 {"job_id", b.job_id},
                 {"seed", manifest.seed},
                 {"task_type", manifest.settings.task_type},
                 {"world_size", rs.host.world_size()},
                 {"backend_hash", b.backend_hash},
                 {"driver", manifest.driver_name},
                 {"device", rs.host.driver_description()},
                 {"abi", std::to_string(UMLOS_ABI_MAJOR) + "." + std::to_string(UMLOS_ABI_MINOR)},
                 {"modules", modules},
                 {"operators", roles_json},
                 {"dataset", dataset ? json{{"id", dataset->id},
                                            {"version", dataset->version},
                                            {"folder", fs::path(dataset->dir).filename().string()},
                                            {"train_rows", dataset->train.rows},
                                            {"val_rows", dataset->val.rows}}
                                     : json(nullptr)}};
  // Which driver ran each primitive: the active one, except those listed
  // here, which the fallback driver ran (the routing is fixed for the run).
  if (const auto from_modules = rs.host.module_primitives(); !from_modules.empty())
    header["module_primitives"] = from_modules;  // primitive -> the module that ran it
  if (const umlos_driver_desc* fb = rs.host.fallback_driver()) {
    header["driver_fallback"] = fb->name;
    header["fallback_device"] = rs.host.fallback_description();
    header["fallback_primitives"] = rs.host.fallback_primitives();
  }
  rs.trace.write(header);
}

// t = 0: the bootstrap operator, then the policy's "policy load" (0.P): the
// policy operator runs once (PURE, no draws, its action discarded), so a
// bad rule fails here, before the first iteration, with nothing but the
// failure record left.
void run_bootstrap_operators(RunState& rs, const Roles& roles) {
  rs.host.set_iteration(0);
  call_role(rs, roles, "bootstrap_op");
  if (roles.get("policy_op")) {
    call_role(rs, roles, "policy_op");
    rs.host.erase_value("action");
  }
  rs.loop_started = true;
}

// Checkpoint restore (docs/checkpoint.md): values, RNG and t from the
// checkpoint; trace and tape cut back to it; the loop continues after t.
// A fresh run opens its tape instead.
void restore_or_open_tape(RunState& rs, const Manifest& manifest, const RunOptions& options, bool from_checkpoint,
                          TapeWriter& tape) {
  if (from_checkpoint) {
    rs.current_operator = "UML_OS.OS.Bootstrap_v1";
    CheckpointData ck = resume_from_checkpoint(rs.host, manifest, rs.run_dir, &tape, options.resume_from);
    rs.state_fp = ck.state_fp;
    rs.functional_fp = ck.functional_fp;
    rs.trace.open_append(rs.folder);
    return;
  }
  tape.open(rs.folder.fd(), "tape.bin", rs.folder.file("tape.bin"));
  if (!options.replica_from.empty()) {
    rs.current_operator = "UML_OS.OS.Bootstrap_v1";
    const CheckpointData ck = read_checkpoint(options.replica_from);
    restore_into(rs.host, ck, manifest);
    rs.replica = true;
    rs.state_fp = ck.state_fp;
    rs.functional_fp = ck.functional_fp;
  }
}

// ---- 1. Bootstrap_v1 and 2. LoadDeclaredModules_v1: namespace, modules,
// driver, RNG, data, the trace header and the t = 0 operators.
Bootstrapped bootstrap(RunState& rs, const Manifest& manifest, const RunOptions& options, TapeWriter& tape) {
  Bootstrapped b;
  b.job_id = job_id(manifest);
  enter_run_folder(rs, manifest, options, b.job_id);
  // From here a signal that kills the process still leaves failure.json.
  crash::arm(rs.folder.fd(), to_hex(manifest.replay_token));
  b.restart = place_manifest_copies(rs, manifest, options);
  configure_host(rs, manifest, options);
  load_declared_modules(rs, manifest, options);
  b.roles = resolve_roles(rs, manifest);
  set_limits(rs, manifest);
  start_driver(rs, manifest);
  rs.current_operator = "UML_OS.OS.Bootstrap_v1";
  join_world(rs.host, manifest, options.world);
  // 0.P: data manifest load + ValidateManifest_v1 (values data.*).
  b.dataset = load_datasets(manifest, rs.host);
  b.checkpoint_every = options.checkpoint_every >= 0 ? options.checkpoint_every : manifest.settings.checkpoint_every;
  b.backend_hash = json_hex(backend_hash(rs.host));
  b.from_checkpoint = options.resume && !b.restart;
  if (!b.from_checkpoint) write_run_header(rs, manifest, b);
  run_bootstrap_operators(rs, b.roles);
  restore_or_open_tape(rs, manifest, options, b.from_checkpoint, tape);
  // The whole wiring against the state the loop starts from: a mistake
  // fails here, before t = 1, naming the manifest line.
  rs.current_operator = "UML_OS.OS.Bootstrap_v1";
  check_wiring(rs.host, b.roles);
  return b;
}

// Termination.Check_v1: the termination operator's `terminate`, else t
// against max_steps.
bool should_terminate(RunState& rs, const Manifest& manifest, const Roles& roles) {
  rs.current_operator = "UML_OS.Termination.Check_v1";
  if (roles.get("termination_op")) {
    call_role(rs, roles, "termination_op");
    return scalar_int(rs.host, "terminate").value_or(0) != 0;
  }
  return rs.host.iteration() >= manifest.settings.max_steps;
}

// The policy's action (0: optimize when the manifest names no policy).
int64_t choose_action(RunState& rs, const Roles& roles) {
  const umlos_operator_desc* policy = roles.get("policy_op");
  if (!policy) return 0;
  call_role(rs, roles, "policy_op");
  const int64_t action = scalar_int(rs.host, "action").value_or(0);
  if (action < 0 || action >= static_cast<int64_t>(kActions.size())) {
    throw Failure(UMLOS_CONTRACT_VIOLATION, std::string("policy operator '") + policy->name + "' chose action " +
                                                std::to_string(action) +
                                                ", outside 0..3 (optimize, probe, switch, augment)");
  }
  return action;
}

// The digest the worker computed, as the run value `name` (u8[32]): the
// oldest one not yet settled, or the newest (`last`: one settled as soon as
// its operator returns, while a step's state_fp may still wait).
Digest put_digest(RunState& rs, const std::string& name, bool last = false) {
  const Digest d = last ? rs.digests->wait_last() : rs.digests->wait();
  HostTensor h;
  h.dtype = UMLOS_DTYPE_U8;
  h.shape.rank = 1;
  h.shape.dims[0] = 32;
  h.data.assign(d.begin(), d.end());
  rs.host.put_value(name, rs.host.from_host(h));
  return d;
}

// Whether the hashing thread of the state fingerprint would find a core of
// its own: a single process may whenever it may use two CPUs or more (it
// is the only busy thread); the ranks of a job sharing this machine only
// when they leave a core free. On one CPU the thread would only take turns
// with the step (digits_wide under `taskset -c 0`: 5.73-6.12 s on the
// thread, 5.43-5.71 s in pairs).
// Otherwise every rank's hashing thread takes time from a rank's step: two
// ranks on two cores ran digits_wide at 31.4 steps/s overlapped against
// 36.5 hashing in place (bench/distributed/README.md); such a rank hashes
// two steps' fingerprints at once on its own thread instead
// (DigestWorker::Mode::pairs).
bool spare_core_per_rank(const WorldOptions& world) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return world.local_size <= 1;
  return std::max(world.local_size, 1) < CPU_COUNT(&cpus);
}

// Whether StateFingerprint_v1's digest may be settled during the next
// step (hashed on the worker's thread, or in pairs) without changing a
// byte of the run: no operator reads the run value
// state_fp; no tape or log operator runs between the fingerprint and the
// iter record; and no disk or memory budget is set, since QuotaEnforce_v1
// measures the job folder and the values at the start of the step (the
// pending iter record and state_fp would be missing from the count, and
// resource_util is in the trace).
bool may_defer_fingerprints(const Roles& roles, const RunOptions& options, const RunSettings& s) {
  if (options.sync_fingerprints || !roles.get("state_fingerprint_op") || roles.get("tape_op") || roles.get("log_op"))
    return false;
  if (s.disk_bytes > 0 || (!s.memory_bytes_is_default && s.memory_bytes > 0)) return false;
  for (const auto& [role, names] : roles.names()) {
    for (const auto& e : roles.entries(role)) {
      // Declared as an input (by name or a family), or bound to it.
      if (find_decl(e->op->inputs, e->op->n_inputs, "state_fp")) return false;
      for (uint32_t i = 0; i < e->op->n_inputs; ++i)
        if (e->binding.input(e->op->inputs[i].name) == "state_fp") return false;
    }
  }
  return true;
}

// StateFingerprint_v1's role. With the worker on, an operator that hands
// its preimage to services->digest_output leaves the digest hashing on
// the worker; rs.state_fp is then settled by settle_step.
void fingerprint_state(RunState& rs, const Roles& roles) {
  struct Detach {
    Host& h;
    ~Detach() { h.set_digest_worker(nullptr); }
  } detach{rs.host};
  rs.host.set_digest_worker(rs.digests.get());
  bool deferred = false;
  const auto& entries = roles.entries("state_fingerprint_op");
  for (size_t k = 0; k < entries.size(); ++k) {
    rs.current_operator = entries[k]->op->name;
    const CallReport r = rs.host.call_operator(entries[k]->op, &entries[k]->binding);
    if (r.deferred_digest.empty()) continue;
    // Only the role's last digest may stay in flight (the worker hashes one
    // at a time), and only the run value state_fp, which the kernel reads:
    // any other is settled at once, as if it had been written.
    if (k + 1 < entries.size() || r.deferred_digest != "state_fp")
      put_digest(rs, r.deferred_digest, true);
    else
      deferred = true;
  }
  if (!deferred) rs.state_fp = digest_value(rs.host, "state_fp");
}

// StateFingerprint_v1, and the functional fingerprint every
// functional_fp_every steps and after an augment. Returns whether a
// functional fingerprint was taken at this t.
bool take_fingerprints(RunState& rs, const Manifest& manifest, const Roles& roles, int64_t action) {
  rs.current_operator = "UML_OS.StateFingerprint_v1";
  if (roles.get("state_fingerprint_op")) {
    fingerprint_state(rs, roles);
  } else {
    rs.state_fp = generic_state_fingerprint(rs.host);
  }
  const int64_t fp_every = manifest.settings.functional_fp_every;
  const int64_t t = rs.host.iteration();
  if ((fp_every > 0 && t % fp_every == 0) || action == 3) {
    if (roles.get("functional_fp_op")) {
      call_role(rs, roles, "functional_fp_op");
      rs.functional_fp = digest_value(rs.host, "functional_fp");
      return true;
    }
  }
  return false;
}

// The iteration's trace record, from the values of this iteration; its
// state_fp is filled in by settle_step.
json iter_record(RunState& rs, int64_t action, bool fp_now) {
  json it = {{"record", "iter"},
             {"t", rs.host.iteration()},
             {"state", scalar_int(rs.host, "state").value_or(0) == 1 ? "S_PROTO" : "S_P"},
             {"action", kActions[action]},
             {"state_fp", nullptr}};
  for (const char* metric : {"loss_total", "grad_norm", "sil_mean", "resource_util"}) {
    std::optional<double> v = scalar_f64(rs.host, metric);
    it[metric] = v ? json(*v) : json(nullptr);
  }
  take_trace_fields(rs.host, it);
  if (fp_now) {
    it["functional_fp"] = json_hex(*rs.functional_fp);
    for (const char* metric : {"val_accuracy", "val_r2"}) {
      if (std::optional<double> v = scalar_f64(rs.host, metric)) it[metric] = *v;
    }
  }
  return it;
}

// The tail of the pending iteration: its state_fp (waiting for the worker
// when it hashes), the VI rank barrier (skipped on the way out of a failed
// run: a peer may be gone), the tape event and the iter record.
void settle_step(RunState& rs, const Roles& roles, TapeWriter& tape, bool barrier) {
  if (!rs.pending) return;
  StepTail tail = std::move(*rs.pending);
  rs.pending.reset();
  if (rs.digest_in_flight()) {
    rs.current_operator = "UML_OS.StateFingerprint_v1";
    rs.state_fp = put_digest(rs, "state_fp");
  }
  // VI: the deterministic barrier after action dispatch, which also proves
  // every rank holds rank 0's state before the tape and the log.
  if (barrier) {
    rs.current_operator = "UML_OS.OS.RankBarrier";
    check_ranks_agree(rs.host, *rs.state_fp, tail.t);
  }
  call_role(rs, roles, "tape_op");
  rs.current_operator = "UML_OS.IO.WriteTape_v1";
  tail.ev.state_fp = *rs.state_fp;
  // A rank restored from rank 0's checkpoint keeps no tape: rank 0's is the
  // job's, and this rank's private one would start in the middle.
  if (!rs.replica) tape.append(tail.ev);
  call_role(rs, roles, "log_op");
  json it = tail.record ? std::move(*tail.record) : iter_record(rs, tail.action, tail.fp_now);
  it["state_fp"] = json_hex(*rs.state_fp);
  rs.trace.write(it);
}

// One iteration t of the VI loop, from the quota check to the checkpoint.
// Returns the loss (for the progress line) and whether a functional
// fingerprint was taken.
std::pair<std::optional<double>, bool> run_iteration(RunState& rs, const Manifest& manifest, const Bootstrapped& b,
                                                     TapeWriter& tape) {
  const Roles& roles = b.roles;
  const RunSettings& s = manifest.settings;
  rs.host.set_iteration(rs.host.iteration() + 1);
  const int64_t t = rs.host.iteration();
  value_safepoint(rs);

  rs.current_operator = "UML_OS.OS.QuotaEnforce_v1";
  enforce_quota(rs, s.disk_bytes, s.memory_bytes_is_default ? 0 : s.memory_bytes);
  for (const char* role : {"quota_op", "next_batch_op", "model_encode_op", "decode_op", "forward_op", "loss_op"}) {
    call_role(rs, roles, role);
  }
  rs.current_operator = "UML_OS.Contract.Validate_v1";
  rs.host.run_invariants(UMLOS_CHECK_AFTER_LOSS);
  call_role(rs, roles, "validate_op");

  // 0.A invalid objective: NaN/Inf ranks as +Inf, no update, abort.
  std::optional<double> loss = scalar_f64(rs.host, "loss_total");
  if (loss && !std::isfinite(*loss)) {
    throw Failure(UMLOS_INVALID_OBJECTIVE, "loss_total is " + std::to_string(*loss) + " at t=" + std::to_string(t) +
                                               "; no update applied (spec 004 0.A)");
  }

  const int64_t action = choose_action(rs, roles);
  const umlos_operator_desc* act = roles.get(kActionRoles[action]);
  if (!act && action != 0) {
    throw Failure(UMLOS_OPERATOR_NOT_FOUND, std::string("the policy chose '") + kActions[action] +
                                                "' at t=" + std::to_string(t) + " but the manifest names no " +
                                                kActionRoles[action] + " (" + manifest.file + ")");
  }
  call_role(rs, roles, kActionRoles[action]);
  rs.current_operator = "UML_OS.Contract.Validate_v1";
  rs.host.run_invariants(UMLOS_CHECK_AFTER_ACTION);

  // The previous iteration's tail first: its digest was hashed while this
  // iteration ran, and the worker takes one digest at a time. Hashing in
  // pairs, a tail whose digest waits for a partner is settled just after
  // this iteration's fingerprint, which is that partner. Either way the
  // rank barrier of t - 1 comes after this iteration's operators and before
  // the next one's: the same order of collectives on every rank, whichever
  // way each hashes (the fingerprint operators call none).
  const bool pairs = rs.digests && rs.digests->mode() == DigestWorker::Mode::pairs;
  if (!pairs || rs.digests->ready()) settle_step(rs, roles, tape, true);
  const bool fp_now = take_fingerprints(rs, manifest, roles, action);
  if (pairs) settle_step(rs, roles, tape, true);
  StepTail tail;
  tail.t = t;
  tail.action = action;
  tail.fp_now = fp_now;
  tail.ev.t = t;
  tail.ev.action = static_cast<uint8_t>(action);
  tail.ev.state = scalar_int(rs.host, "state").value_or(0) == 1 ? 1 : 0;
  tail.ev.loss_total = loss;
  if (rs.digest_in_flight()) tail.record = iter_record(rs, action, fp_now);
  rs.pending = std::move(tail);
  const bool checkpoint_now = b.checkpoint_every > 0 && t % b.checkpoint_every == 0;
  if (!rs.digest_in_flight() || checkpoint_now) settle_step(rs, roles, tape, true);
  // Every rank holds the same state (checked above), so rank 0's checkpoint
  // is the job's.
  if (checkpoint_now && rs.host.rank() == 0) write_run_checkpoint(rs, manifest, tape, s.checkpoint_keep);
  return {loss, fp_now};
}

// ---- 4. The VI loop until termination. Returns whether the last
// functional fingerprint was taken at the final t.
bool run_loop(RunState& rs, const Manifest& manifest, const RunOptions& options, const Bootstrapped& b,
              TapeWriter& tape) {
  Progress progress(manifest.settings.max_steps);
  bool last_fp_current = false;
  while (!should_terminate(rs, manifest, b.roles)) {
    const auto [loss, fp_now] = run_iteration(rs, manifest, b, tape);
    last_fp_current = fp_now;
    if (!options.quiet) progress.update(rs.host.iteration(), loss, rs.host, false);
  }
  if (!options.quiet) progress.update(rs.host.iteration(), scalar_f64(rs.host, "loss_total"), rs.host, true);
  return last_fp_current;
}

// The end of a run that succeeded: the final checkpoint and fingerprint,
// the run_end record, the final value arenas, the profile.
void finish_run(RunState& rs, const Manifest& manifest, const RunOptions& options, const Bootstrapped& b,
                TapeWriter& tape, bool last_fp_current, std::chrono::steady_clock::time_point start) {
  settle_step(rs, b.roles, tape, true);
  // Spec 004 0.I: theta_final is an output of every run that ends. The
  // final state is checkpointed whatever checkpoint_every is (unless the
  // loop just wrote this very checkpoint), before the run_end record, so
  // a resume from it rewrites run_end exactly and `umlos export` reads
  // the final parameters from it.
  if (const int64_t t = rs.host.iteration();
      rs.host.rank() == 0 && !(b.checkpoint_every > 0 && t > 0 && t % b.checkpoint_every == 0)) {
    write_run_checkpoint(rs, manifest, tape, manifest.settings.checkpoint_keep);
  }
  // The run's last functional fingerprint and held-out metric describe the
  // final parameters, not those of the last multiple of functional_fp_every.
  if (b.roles.get("functional_fp_op") && !last_fp_current) {
    call_role(rs, b.roles, "functional_fp_op");
    rs.functional_fp = digest_value(rs.host, "functional_fp");
  }
  rs.current_operator = "UML_OS.Logging.LogIteration_v1";
  json end = {{"record", "run_end"},
              {"status", "success"},
              {"t", rs.host.iteration()},
              {"state_fp", rs.state_fp ? json(json_hex(*rs.state_fp)) : json(nullptr)},
              {"functional_fp", rs.functional_fp ? json(json_hex(*rs.functional_fp)) : json(nullptr)},
              {"rng_fingerprint", json_hex(rs.host.rng().fingerprint())},
              {"replay_token", json_hex(manifest.replay_token)},
              {"task_type", manifest.settings.task_type},
              {"world_size", rs.host.world_size()},
              {"backend_hash", b.backend_hash},
              {"tape_digest", to_hex(tape.close())}};
  for (const char* metric : {"val_accuracy", "val_r2"}) {
    if (std::optional<double> v = scalar_f64(rs.host, metric)) end[metric] = *v;
  }
  rs.trace.write(end);
  rs.trace.close();
  if (rs.value_arenas) {  // the final state in its slots, as the file then says
    rs.current_operator = "UML_OS.TMMU.ApplyPlan_v1";
    rs.value_arenas->safepoint();
    rs.folder.write_atomic("value_arenas.json", rs.value_arenas->to_json());
  }
  if (options.profile) write_profile(rs, std::chrono::steady_clock::now() - start);
  if (!options.quiet) {
    std::fprintf(stderr, "run complete: %lld steps, final state_fp %s\ntrace: %s\n",
                 static_cast<long long>(rs.host.iteration()), rs.state_fp ? to_hex(*rs.state_fp).c_str() : "-",
                 (fs::path(rs.run_dir) / "trace.jsonl").c_str());
  }
}

// A run that fails with an iteration's tail pending (its digest hashed
// while the next iteration ran) first records that iteration as a run
// without the overlap would have: the tape event and the iter record. The
// failure record still names the operator that failed.
void settle_after_failure(RunState& rs, const Roles& roles, TapeWriter& tape) {
  if (!rs.pending) return;
  const std::string failed = rs.current_operator;
  try {
    settle_step(rs, roles, tape, false);
  } catch (const Failure& g) {
    std::fprintf(stderr, "umlos: could not record iteration %lld before the failure: %s\n",
                 static_cast<long long>(rs.host.iteration() - 1), g.what());
  }
  rs.current_operator = failed;
}

// A run that failed (0.K): run_end and failure.json in the run folder, the
// record on stderr; the exit status for the failure code.
int record_run_failure(RunState& rs, const Failure& f) {
  json record = failure_record(rs, f);
  try {
    write_failed_run_end(rs, f);
  } catch (const Failure& g) {
    // The trace itself failed (a full disk): the failure record still goes.
    std::fprintf(stderr, "umlos: could not end the trace: %s\n", g.what());
  }
  try {
    rs.trace.close();
    // A run that failed before its first iteration leaves nothing in its
    // namespace folder but the failure record. Nothing at all is written
    // into a folder this process does not hold (another run's).
    if (rs.folder.held()) {
      if (!rs.loop_started && rs.fresh_folder) rs.folder.clear();
      rs.folder.write_atomic("failure.json", record.dump(2) + "\n");
    }
  } catch (const Failure& g) {
    std::fprintf(stderr, "umlos: could not write the failure record: %s\n", g.what());
  }
  std::fprintf(stderr, "umlos: %s: %s\n%s\n", status_name(f.code()), f.what(), record.dump().c_str());
  return exit_code_for(f.code());
}

}  // namespace

int run_manifest(const std::string& manifest_file, const RunOptions& options) {
  Manifest manifest;
  try {
    manifest = load_manifest(manifest_file);
  } catch (const Failure& f) {
    return manifest_failure(f);
  }
  RunState rs;
  rs.manifest = &manifest;
  struct Disarm {
    ~Disarm() { crash::disarm(); }
  } disarm;
  const auto start = std::chrono::steady_clock::now();
  TapeWriter tape;
  std::unique_ptr<Bootstrapped> b;
  try {
    b = std::make_unique<Bootstrapped>(bootstrap(rs, manifest, options, tape));
    if (may_defer_fingerprints(b->roles, options, manifest.settings)) {
      const bool pairs = options.paired_fingerprints || !spare_core_per_rank(options.world);
      rs.digests = std::make_unique<DigestWorker>(pairs ? DigestWorker::Mode::pairs : DigestWorker::Mode::thread);
    }
    const bool last_fp_current = run_loop(rs, manifest, options, *b, tape);
    finish_run(rs, manifest, options, *b, tape, last_fp_current, start);
    return 0;
  } catch (const Failure& f) {
    if (b) settle_after_failure(rs, b->roles, tape);
    if (options.world.size <= 1) return record_run_failure(rs, f);
    // Multi-rank: say why this rank stops, and a rank that lost a peer
    // names the rank that caused it (docs/distributed.md, "Failures").
    note_rank_failure(
        options.world, options.world.rank,
        "rank " + std::to_string(options.world.rank) + " failed " + status_name(f.code()) + ": " + f.what());
    if (f.code() != UMLOS_COLLECTIVE_FAILURE) return record_run_failure(rs, f);
    const std::string cause = failed_ranks(options.world, 5000);
    return record_run_failure(
        rs, Failure(f.code(), std::string(f.what()) + (cause.empty() ? "" : " [the other ranks: " + cause + "]")));
  }
}

}  // namespace umlos
