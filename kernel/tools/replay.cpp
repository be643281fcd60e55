// replay.cpp — compare_traces and `umlos replay --verify RUN_DIR`.
#include "replay.hpp"

#include <stdlib.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_parse.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "manifest.hpp"
#include "procedure.hpp"
#include "replay_checkpoints.hpp"
#include "tape.hpp"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

const std::vector<std::string>& trace_fields_ignored() {
  // Wall-clock figures, and where the manifest and the run folder lie (a
  // replay reruns a copy of the manifest into another folder).
  static const std::vector<std::string> fields = {"elapsed_s", "steps_per_s",   "wall_time_s",
                                                  "timestamp", "manifest_file", "run_dir"};
  return fields;
}

std::string TraceDiff::describe() const {
  if (identical) return "identical";
  std::string s = "line " + std::to_string(line);
  if (!record.empty()) s += " (" + record + (t >= 0 ? " t=" + std::to_string(t) : std::string()) + ")";
  s += ": field '" + field + "': a " + a_value + ", b " + b_value;
  return s;
}

namespace {

class JsonlReader {
 public:
  explicit JsonlReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw Failure(UMLOS_NOT_FOUND, "trace '" + path + "' does not exist");
    if (!in_) throw Failure(UMLOS_IO_ERROR, "cannot read trace '" + path + "'");
  }
  // The next record, or false at the end of the file.
  bool next(json& out) {
    std::string line;
    if (!std::getline(in_, line)) return false;
    ++line_;
    try {
      out = json::parse(line);
    } catch (const json::exception& e) {
      throw Failure(UMLOS_DATA_LOSS, path_ + ":" + std::to_string(line_) + ": not a JSON record (" + e.what() + ")");
    }
    if (!out.is_object()) {
      throw Failure(UMLOS_DATA_LOSS, path_ + ":" + std::to_string(line_) + ": expected a JSON object, found " +
                                         std::string(out.type_name()));
    }
    return true;
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t line_ = 0;
};

std::string summary(const json& r) {
  std::string s = r.value("record", std::string("?"));
  if (r.contains("t")) s += " t=" + r["t"].dump();
  return "{" + s + "}";
}

}  // namespace

TraceDiff compare_traces(const std::string& a, const std::string& b) {
  JsonlReader ra(a), rb(b);
  const std::set<std::string> ignored(trace_fields_ignored().begin(), trace_fields_ignored().end());
  TraceDiff d;
  json ja, jb;
  for (uint64_t line = 1;; ++line) {
    const bool ha = ra.next(ja), hb = rb.next(jb);
    if (!ha && !hb) {
      d.records = line - 1;
      return d;
    }
    d.line = line;
    if (ha != hb) {
      d.identical = false;
      d.records = line - 1;
      const json& present = ha ? ja : jb;
      d.record = present.value("record", std::string());
      d.t = present.contains("t") && present["t"].is_number_integer() ? present["t"].get<int64_t>() : -1;
      d.field = "(record)";
      d.a_value = ha ? summary(ja) : "(end of file)";
      d.b_value = hb ? summary(jb) : "(end of file)";
      return d;
    }
    std::vector<std::string> keys = {"record", "t"};
    std::set<std::string> rest;
    for (auto it = ja.begin(); it != ja.end(); ++it) rest.insert(it.key());
    for (auto it = jb.begin(); it != jb.end(); ++it) rest.insert(it.key());
    rest.erase("record");
    rest.erase("t");
    keys.insert(keys.end(), rest.begin(), rest.end());
    for (const std::string& k : keys) {
      if (ignored.count(k)) continue;
      const bool ia = ja.contains(k), ib = jb.contains(k);
      if (!ia && !ib) continue;
      const std::string va = ia ? ja[k].dump() : "(absent)";
      const std::string vb = ib ? jb[k].dump() : "(absent)";
      if (va == vb) continue;
      d.identical = false;
      d.records = line;
      d.record = ja.value("record", std::string());
      d.t = ja.contains("t") && ja["t"].is_number_integer() ? ja["t"].get<int64_t>() : -1;
      d.field = k;
      d.a_value = va;
      d.b_value = vb;
      return d;
    }
  }
}

namespace {

json first_record(const std::string& trace) {
  std::ifstream in(trace, std::ios::binary);
  std::string line;
  if (!std::getline(in, line)) throw Failure(UMLOS_DATA_LOSS, trace + ":1: the trace is empty (no run_header)");
  json r;
  try {
    r = json::parse(line);
  } catch (const json::exception& e) {
    throw Failure(UMLOS_DATA_LOSS, trace + ":1: not a JSON record (" + e.what() + ")");
  }
  if (!r.is_object() || r.value("record", std::string()) != "run_header") {
    throw Failure(UMLOS_DATA_LOSS, trace + ":1: field 'record': expected \"run_header\", found " +
                                       (r.is_object() && r.contains("record") ? r["record"].dump() : "none"));
  }
  return r;
}

json last_record(const std::string& trace) {
  std::ifstream in(trace, std::ios::binary);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  try {
    return json::parse(last);
  } catch (const json::exception&) {
    return json::object();
  }
}

std::string make_work_dir() {
  std::string tmpl = (fs::temp_directory_path() / "umlos-replay-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw Failure(UMLOS_IO_ERROR, "cannot create a folder for the rerun under " + tmpl);
  return buf.data();
}

// ---- Which module files a replay may load.
//
// A run folder may come from someone else, and everything in it (the
// manifest copy and its pins, manifest.path, the trace header) is theirs to
// write. So the rerun never resolves a module against the run folder and
// never loads a file that lies in it (after symbolic links) unless
// --trust-run-folder-modules says so: module code comes from a folder the
// user names (--modules), a manifest the user names (--manifest), or the
// paths the run recorded outside its folder.

bool lies_inside(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  const fs::path f = fs::weakly_canonical(fs::absolute(file, ec), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  const fs::path rel = f.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

std::string module_list(const std::vector<std::string>& files) {
  std::string s;
  for (const std::string& f : files) s += (s.empty() ? "" : ", ") + f;
  return s;
}

std::vector<std::string> missing_files(const std::vector<std::string>& files) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (const std::string& f : files) {
    if (!fs::is_regular_file(f, ec)) missing.push_back(f);
  }
  return missing;
}

std::vector<std::string> resolved_paths(const Manifest& m) {
  std::vector<std::string> files;
  for (const ModuleEntry& e : m.modules) files.push_back(e.resolved_path);
  return files;
}

// --modules DIR: each module is DIR/<the file name the manifest gives it>.
std::vector<std::string> files_in_modules_dir(const std::string& dir, const Manifest& m) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Failure(UMLOS_NOT_FOUND, "--modules '" + dir + "': not a folder (expected the folder holding the modules)");
  }
  std::vector<std::string> files;
  std::set<std::string> names;
  for (size_t i = 0; i < m.modules.size(); ++i) {
    const std::string name = fs::path(m.modules[i].path).filename().string();
    if (!names.insert(name).second) {
      throw Failure(UMLOS_INVALID_ARGUMENT, m.file + ": key 'modules[" + std::to_string(i) + "].path': file name '" +
                                                name +
                                                "' is used by two modules, so --modules cannot tell them "
                                                "apart; pass --manifest FILE instead");
    }
    files.push_back((fs::path(dir) / name).string());
  }
  return files;
}

// Without --modules or --manifest: the copy's absolute module paths, or the
// original manifest the run recorded (RUN_DIR/manifest.path, else the run
// header's manifest_file) when its canonical bytes are the copy's; never
// the copy's relative paths against RUN_DIR (unless trusted). May switch
// `manifest_file` and `m` to the original.
std::vector<std::string> recorded_module_files(const ReplayOptions& options, const fs::path& run_dir,
                                               const json& header, std::string& manifest_file, Manifest& m) {
  std::error_code ec;
  bool all_absolute = true;
  for (const ModuleEntry& e : m.modules) all_absolute = all_absolute && fs::path(e.path).is_absolute();
  std::vector<std::string> files = resolved_paths(m);
  if ((all_absolute || options.trust_run_folder_modules) && missing_files(files).empty()) return files;

  std::string original = header.value("manifest_file", std::string());
  const std::string path_file = (run_dir / "manifest.path").string();
  if (fs::is_regular_file(path_file, ec)) {
    original = read_text_file(path_file);
    while (!original.empty() && (original.back() == '\n' || original.back() == '\r')) original.pop_back();
  }
  std::string why;
  if (original.empty()) {
    why = "the original manifest is not named (no manifest.path in the run folder)";
  } else if (!fs::path(original).is_absolute()) {
    why = "the original manifest '" + original + "' is not an absolute path";
  } else if (!fs::is_regular_file(original, ec)) {
    why = "the original manifest '" + original + "' is missing";
  } else {
    Manifest o = load_manifest(original);
    if (o.canonical_bytes == m.canonical_bytes) {
      manifest_file = original;
      m = std::move(o);
      return resolved_paths(m);
    }
    why = "the original manifest '" + original + "' is another manifest";
  }
  const std::vector<std::string> missing = missing_files(files);
  throw Failure(UMLOS_MODULE_NOT_FOUND,
                "'" + manifest_file + "': its modules are not named by absolute paths that exist (" +
                    (missing.empty() ? module_list(files) : module_list(missing)) + ") and " + why +
                    "; pass --modules DIR (the folder holding your copies of the modules) or --manifest FILE");
}

std::vector<std::string> replay_module_files(const ReplayOptions& options, const fs::path& run_dir, const json& header,
                                             std::string& manifest_file, Manifest& m) {
  std::vector<std::string> files;
  if (!options.modules_dir.empty()) {
    files = files_in_modules_dir(options.modules_dir, m);
  } else if (!options.manifest_file.empty()) {
    files = resolved_paths(m);
  } else {
    files = recorded_module_files(options, run_dir, header, manifest_file, m);
  }
  if (!options.trust_run_folder_modules) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (lies_inside(files[i], run_dir)) {
        throw Failure(UMLOS_PERMISSION_DENIED,
                      "module '" + files[i] + "' (modules[" + std::to_string(i) + "] of '" + manifest_file +
                          "') lies in the run folder under review '" + run_dir.string() +
                          "': replay does not run code shipped in a run folder; pass --modules DIR (the folder "
                          "holding your copies of the modules) or, if you trust whoever wrote the folder, "
                          "--trust-run-folder-modules");
      }
    }
  }
  return files;
}

}  // namespace

int replay_verify(const ReplayOptions& options) {
  const fs::path run_dir(options.run_dir);
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    throw Failure(UMLOS_NOT_FOUND, "run folder '" + options.run_dir + "' does not exist");
  }
  const std::string trace = (run_dir / "trace.jsonl").string();
  if (!fs::is_regular_file(trace, ec)) {
    throw Failure(UMLOS_NOT_FOUND,
                  "run folder '" + options.run_dir + "' has no trace.jsonl (expected '" + trace + "')");
  }
  const bool given = !options.manifest_file.empty();
  std::string manifest_file = given ? options.manifest_file : (run_dir / "manifest.yaml").string();
  if (!fs::is_regular_file(manifest_file, ec)) {
    throw Failure(UMLOS_NOT_FOUND, given ? "manifest '" + manifest_file + "' does not exist"
                                         : "run folder '" + options.run_dir + "' has no manifest copy (expected '" +
                                               manifest_file +
                                               "', the pinned manifest the run used; or pass --manifest)");
  }
  Manifest m = load_manifest(manifest_file);
  json header = first_record(trace);
  const std::vector<std::string> module_files = replay_module_files(options, run_dir, header, manifest_file, m);
  // The header's manifest_hash first: a foreign --manifest is a usage error,
  // whatever the stored CBOR copy holds.
  const std::string recorded_hash = header.value("manifest_hash", std::string());
  if (recorded_hash != to_hex(m.manifest_hash)) {
    throw Failure(given ? UMLOS_INVALID_ARGUMENT : UMLOS_DATA_LOSS,
                  trace + ":1: field 'manifest_hash': the run recorded " +
                      (recorded_hash.empty() ? std::string("none") : recorded_hash) + ", manifest '" + manifest_file +
                      "' has " + to_hex(m.manifest_hash) + ": not the manifest of this run");
  }

  const std::string cbor_file = (run_dir / "manifest.cbor").string();
  if (fs::is_regular_file(cbor_file, ec)) {
    std::vector<uint8_t> recorded = read_file(cbor_file);
    if (recorded != m.canonical_bytes) {
      throw Failure(UMLOS_DATA_LOSS, "'" + cbor_file + "': expected the canonical bytes of '" + manifest_file +
                                         "' (manifest_hash " + to_hex(m.manifest_hash) + "), found bytes hashing to " +
                                         to_hex(sha256(recorded)));
    }
  }

  // Every checkpoint the run folder holds, before the rerun: a corrupt one
  // is a corrupt run folder, whatever the traces say.
  const size_t checkpoints = check_recorded_checkpoints(options.run_dir, m);

  const std::string work = options.work_dir.empty() ? make_work_dir() : options.work_dir;
  const std::string rerun_dir = (fs::path(work) / "run").string();
  fs::remove_all(rerun_dir, ec);
  RunOptions ro;
  ro.run_dir = rerun_dir;
  ro.quiet = true;
  ro.module_files = module_files;
  ro.checkpoint_every = -1;  // the manifest's checkpoints, compared with the recorded ones below
  const int rc = run_manifest(manifest_file, ro);
  const std::string rerun_trace = (fs::path(rerun_dir) / "trace.jsonl").string();
  const bool recorded_failed = last_record(trace).value("status", std::string()) == "failed";
  if (rc != 0 && !recorded_failed) {
    std::printf("rerun failed with exit status %d (the recorded run did not fail); see %s/failure.json\n", rc,
                rerun_dir.c_str());
    return rc;
  }
  if (!fs::is_regular_file(rerun_trace, ec)) {
    std::printf("rerun wrote no trace (exit status %d); see %s\n", rc, rerun_dir.c_str());
    return rc != 0 ? rc : exit_code_for(UMLOS_INTERNAL);
  }
  TraceDiff d = compare_traces(trace, rerun_trace);
  if (!d.identical) {
    std::printf("differ: first difference at %s\n  a = %s\n  b = %s (rerun in %s)\n", d.describe().c_str(),
                trace.c_str(), rerun_trace.c_str(), rerun_dir.c_str());
    if (d.t >= 0) {
      std::printf("t %lld field %s\n  recorded %s\n  rerun    %s\n", static_cast<long long>(d.t), d.field.c_str(),
                  d.a_value.c_str(), d.b_value.c_str());
    }
    return kReplayDiffersExit;
  }
  const std::string tape_a = (run_dir / "tape.bin").string(), tape_b = (fs::path(rerun_dir) / "tape.bin").string();
  const bool has_a = fs::is_regular_file(tape_a, ec), has_b = fs::is_regular_file(tape_b, ec);
  std::string tape_note;
  if (has_a || has_b) {
    if (has_a != has_b) {
      std::printf("differ: tape.bin exists only in %s\n", has_a ? "the recorded run" : "the rerun");
      return kReplayDiffersExit;
    }
    Digest da = read_tape(tape_a).digest, db = read_tape(tape_b).digest;
    if (da != db) {
      std::printf("differ: tape_digest\n  recorded %s (%s)\n  rerun    %s (%s)\n", to_hex(da).c_str(), tape_a.c_str(),
                  to_hex(db).c_str(), tape_b.c_str());
      return kReplayDiffersExit;
    }
    tape_note = ", tape_digest " + to_hex(da);
  }
  const CheckpointComparison cc = compare_checkpoints(options.run_dir, rerun_dir);
  if (!cc.difference.empty()) {
    std::printf("differ: checkpoint %s\n  recorded %s\n  rerun    %s\n", cc.difference.c_str(),
                (run_dir / "checkpoints").string().c_str(), (fs::path(rerun_dir) / "checkpoints").string().c_str());
    return kReplayDiffersExit;
  }
  tape_note += ", " + std::to_string(checkpoints) + " checkpoint" + (checkpoints == 1 ? "" : "s") + " intact, " +
               std::to_string(cc.compared) + " equal to the rerun's";
  std::printf("identical (%llu records%s%s)\n", static_cast<unsigned long long>(d.records), tape_note.c_str(),
              rc != 0 ? (", both runs failed, exit status " + std::to_string(rc)).c_str() : "");
  if (!options.keep && options.work_dir.empty()) fs::remove_all(work, ec);
  return 0;
}

}  // namespace umlos

// ---- `umlos replay`
namespace umlos {

int cmd_replay(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  const char* usage =
      "umlos replay --verify RUN_DIR [--manifest FILE] [--modules DIR] [--trust-run-folder-modules] [--work DIR] "
      "[--keep]";
  po::options_description desc("umlos replay options");
  ReplayOptions o;
  bool verify = false;
  desc.add_options()("verify", po::bool_switch(&verify),
                     "rerun the run's manifest and compare the traces record by record")(
      "run-dir", po::value<std::string>(&o.run_dir)->required(), "the recorded run folder")(
      "manifest", po::value<std::string>(&o.manifest_file),
      "the manifest to rerun (default RUN_DIR/manifest.yaml); its manifest_hash must be the run's")(
      "modules", po::value<std::string>(&o.modules_dir),
      "load each module from DIR/<its file name> (your own copies; each still checked against its pin)")(
      "trust-run-folder-modules", po::bool_switch(&o.trust_run_folder_modules),
      "allow module files inside RUN_DIR (their code runs: only for a folder you trust)")(
      "work", po::value<std::string>(&o.work_dir), "rerun into DIR/run (default: a new folder under the temp dir)")(
      "keep", po::bool_switch(&o.keep), "keep the rerun folder when the traces are identical");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  po::variables_map vm;
  if (!parse_command_line(args, desc, pos, vm, [&](const po::options_description& d) {
        std::cout << "usage: " << usage << "\n\n"
                  << d
                  << "\nModules: never loaded from inside RUN_DIR (a run folder may come from someone else) unless\n"
                     "--trust-run-folder-modules; by default the absolute paths the run recorded, or those of the\n"
                     "original manifest it names (same canonical bytes); --modules DIR or --manifest FILE choose.\n"
                  << "\nExit status: 0 identical, " << kReplayDiffersExit
                  << " the traces (or tapes) differ, otherwise the failure's status (docs/exit-codes.md).\n";
      }))
    return 0;
  if (!verify) throw po::error("only --verify is implemented: " + std::string(usage));
  return replay_verify(o);
}

}  // namespace umlos
