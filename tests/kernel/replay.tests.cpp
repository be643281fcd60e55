// Trace comparison and `umlos replay --verify RUN_DIR` on real runs of the
// demo-walk manifest.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "error.hpp"
#include "procedure.hpp"
#include "replay.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::vector<std::string> kModules = {module_path("umlos_cpu_driver"), module_path("umlos_core")};

// A finished run folder holding manifest.yaml (the pinned manifest the run
// used, modules by absolute path) and trace.jsonl.
std::string recorded_run(const std::string& tag, int steps = 30, uint64_t seed = 7) {
  // The manifest beside the run folder: a new run takes only an empty one.
  const std::string base = temp_dir(tag);
  std::string dir = base + "/run";
  write_text(base + "/walk.yaml", walk_manifest(kModules, kWalkOperators, steps, 1, seed));
  RunOptions o;
  o.run_dir = dir;
  o.quiet = true;
  REQUIRE(run_manifest(base + "/walk.yaml", o) == 0);
  return dir;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// The trace with `field` of the iter record of `t` replaced.
void edit_trace(const std::string& file, int64_t t, const std::string& field, const json& value) {
  std::vector<std::string> lines = lines_of(read_text(file));
  for (std::string& l : lines) {
    json r = json::parse(l);
    if (r["record"] == "iter" && r["t"] == t) {
      r[field] = value;
      l = r.dump();
    }
  }
  write_text(file, join(lines));
}

}  // namespace

TEST_CASE("compare_traces finds two traces of one manifest identical and names the first differing t and field",
          "[replay]") {
  std::string a = recorded_run("cmp-a"), b = recorded_run("cmp-b");
  TraceDiff same = compare_traces(a + "/trace.jsonl", b + "/trace.jsonl");
  CHECK(same.identical);
  CHECK(same.records == 32);
  CHECK(same.describe() == "identical");

  edit_trace(b + "/trace.jsonl", 9, "loss_total", 0.125);
  edit_trace(b + "/trace.jsonl", 12, "action", "probe");
  TraceDiff d = compare_traces(a + "/trace.jsonl", b + "/trace.jsonl");
  REQUIRE_FALSE(d.identical);
  CHECK(d.line == 10);
  CHECK(d.record == "iter");
  CHECK(d.t == 9);
  CHECK(d.field == "loss_total");
  CHECK(d.b_value == "0.125");
  CHECK(d.a_value == json::parse(lines_of(read_text(a + "/trace.jsonl"))[9])["loss_total"].dump());
  CHECK(d.describe().find("line 10 (iter t=9): field 'loss_total'") != std::string::npos);
}

TEST_CASE("compare_traces skips the wall-clock fields and reports a missing field, a missing record and a bad line",
          "[replay]") {
  std::string dir = temp_dir("cmp-hand");
  const std::string header = R"({"record":"run_header","name":"x","replay_token":"ab"})";
  write_text(dir + "/a.jsonl", header + "\n" + R"({"record":"iter","t":1,"loss_total":0.5,"elapsed_s":0.01})" + "\n" +
                                   R"({"record":"run_end","t":1,"status":"success","steps_per_s":950.0})" + "\n");
  write_text(dir + "/b.jsonl", header + "\n" + R"({"record":"iter","t":1,"loss_total":0.5,"elapsed_s":0.02})" + "\n" +
                                   R"({"record":"run_end","t":1,"status":"success","steps_per_s":990.5})" + "\n");
  CHECK(std::find(trace_fields_ignored().begin(), trace_fields_ignored().end(), "elapsed_s") !=
        trace_fields_ignored().end());
  CHECK(compare_traces(dir + "/a.jsonl", dir + "/b.jsonl").identical);

  write_text(dir + "/c.jsonl", header + "\n" + R"({"record":"iter","t":1,"elapsed_s":0.02})" + "\n");
  TraceDiff missing = compare_traces(dir + "/a.jsonl", dir + "/c.jsonl");
  CHECK(missing.field == "loss_total");
  CHECK(missing.a_value == "0.5");
  CHECK(missing.b_value == "(absent)");

  write_text(dir + "/d.jsonl", header + "\n" + R"({"record":"iter","t":1,"loss_total":0.5})" + "\n");
  TraceDiff shorter = compare_traces(dir + "/a.jsonl", dir + "/d.jsonl");
  CHECK(shorter.line == 3);
  CHECK(shorter.field == "(record)");
  CHECK(shorter.record == "run_end");
  CHECK(shorter.b_value == "(end of file)");

  // 0.1 + 0.2 and 0.3 are different doubles: the JSON texts differ.
  write_text(dir + "/e.jsonl", header + "\n" + R"({"record":"iter","t":1,"loss_total":0.30000000000000004})" + "\n");
  write_text(dir + "/f.jsonl", header + "\n" + R"({"record":"iter","t":1,"loss_total":0.3})" + "\n");
  CHECK_FALSE(compare_traces(dir + "/e.jsonl", dir + "/f.jsonl").identical);

  write_text(dir + "/g.jsonl", header + "\n{\"record\":\"iter\",\"t\":1,\n");
  try {
    compare_traces(dir + "/a.jsonl", dir + "/g.jsonl");
    FAIL("a broken line was accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DATA_LOSS);
    CHECK(std::string(f.what()).find(dir + "/g.jsonl:2:") != std::string::npos);
  }
  try {
    compare_traces(dir + "/a.jsonl", dir + "/none.jsonl");
    FAIL("a missing trace was accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_NOT_FOUND);
    CHECK(std::string(f.what()).find("none.jsonl") != std::string::npos);
  }
}

TEST_CASE("umlos replay --verify reruns a recorded run and prints identical", "[replay]") {
  std::string run = recorded_run("replay-ok");
  CommandResult r = run_umlos("replay --verify '" + run + "'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK(r.output.rfind("identical", 0) == 0);
  CHECK(r.output.find("32 records") != std::string::npos);
}

TEST_CASE("umlos replay --verify names the first differing t and field of a tampered trace and exits 3", "[replay]") {
  std::string run = recorded_run("replay-diff");
  edit_trace(run + "/trace.jsonl", 5, "state_fp", std::string(64, '0'));
  std::string work = temp_dir("replay-diff-work");
  CommandResult r = run_umlos("replay --verify '" + run + "' --work '" + work + "'");
  INFO(r.output);
  CHECK(r.exit_status == kReplayDiffersExit);
  CHECK(r.output.find("t 5 field state_fp") != std::string::npos);
  CHECK(r.output.find(std::string(64, '0')) != std::string::npos);
  CHECK(fs::exists(work + "/run/trace.jsonl"));  // the rerun is kept for inspection
}

TEST_CASE("umlos replay --verify refuses a missing run folder, a missing manifest copy and a foreign manifest",
          "[replay]") {
  CommandResult none = run_umlos("replay --verify /nonexistent/umlos-run");
  CHECK(none.exit_status == exit_code_for(UMLOS_NOT_FOUND));
  CHECK(none.output.find("NOT_FOUND: run folder '/nonexistent/umlos-run' does not exist") != std::string::npos);

  std::string run = recorded_run("replay-bad");
  std::string other = temp_dir("replay-other") + "/other.yaml";
  write_text(other, walk_manifest(kModules, kWalkOperators, 30, 1, 8));
  CommandResult foreign = run_umlos("replay --verify '" + run + "' --manifest '" + other + "'");
  INFO(foreign.output);
  CHECK(foreign.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(foreign.output.find("field 'manifest_hash'") != std::string::npos);
  CHECK(foreign.output.find("not the manifest of this run") != std::string::npos);

  write_text(run + "/manifest.cbor", "not the canonical bytes");
  CommandResult cbor = run_umlos("replay --verify '" + run + "'");
  CHECK(cbor.exit_status == exit_code_for(UMLOS_DATA_LOSS));
  CHECK(cbor.output.find("manifest.cbor") != std::string::npos);

  fs::remove(run + "/manifest.cbor");
  fs::remove(run + "/manifest.yaml");
  CommandResult copy = run_umlos("replay --verify '" + run + "'");
  CHECK(copy.exit_status == exit_code_for(UMLOS_NOT_FOUND));
  CHECK(copy.output.find("manifest.yaml") != std::string::npos);

  CommandResult usage = run_umlos("replay '" + run + "'");
  CHECK(usage.exit_status == 2);
}

TEST_CASE("umlos replay --verify reruns the original manifest when the run folder's copy has relative module paths",
          "[replay]") {
  // The manifest names its modules relative to its own folder; the copy in
  // RUN_DIR keeps that text, so the paths do not resolve from RUN_DIR.
  std::string base = temp_dir("replay-rel");
  fs::create_directories(base + "/exp");
  std::vector<std::string> rel;
  for (const std::string& m : kModules) rel.push_back(fs::relative(m, base + "/exp").string());
  std::string text = walk_manifest(kModules, kWalkOperators, 20);
  for (size_t i = 0; i < kModules.size(); ++i) {
    size_t at = text.find(kModules[i]);
    REQUIRE(at != std::string::npos);
    text.replace(at, kModules[i].size(), rel[i]);
  }
  write_text(base + "/exp/m.yaml", text);
  RunOptions o;
  o.run_dir = base + "/exp/runs/r1";
  o.quiet = true;
  REQUIRE(run_umlos("run '" + base + "/exp/m.yaml' --run-dir '" + o.run_dir + "' -q").exit_status == 0);
  REQUIRE(fs::exists(o.run_dir + "/manifest.yaml"));

  CommandResult r = run_umlos("replay --verify '" + o.run_dir + "'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK(r.output.rfind("identical", 0) == 0);

  // Without the original, the copy alone cannot name the modules.
  fs::rename(base + "/exp/m.yaml", base + "/exp/moved.yaml");
  CommandResult gone = run_umlos("replay --verify '" + o.run_dir + "'");
  INFO(gone.output);
  CHECK(gone.exit_status == exit_code_for(UMLOS_MODULE_NOT_FOUND));
  CHECK(gone.output.find("--modules DIR") != std::string::npos);
  CHECK(gone.output.find("--manifest FILE") != std::string::npos);
  // --modules names the folder holding the modules: accepted, pins checked.
  CommandResult named = run_umlos("replay --verify '" + o.run_dir + "' --modules '" + UMLOS_MODULE_DIR + "'");
  INFO(named.output);
  CHECK(named.exit_status == 0);
  CHECK(named.output.rfind("identical", 0) == 0);
  // --manifest names a file whose modules resolve: accepted.
  CommandResult given = run_umlos("replay --verify '" + o.run_dir + "' --manifest '" + base + "/exp/moved.yaml'");
  INFO(given.output);
  CHECK(given.exit_status == 0);
}

TEST_CASE("umlos replay --verify never runs a module shipped inside the run folder unless told to trust it",
          "[replay][security]") {
  // The sender's run: a genuine run folder whose manifest loads a module
  // kept in the folder itself (relative path), pinned and recorded.
  // The sender ran it from a folder of their own (a run only ever writes
  // into a new folder), then shipped the module inside the run folder.
  const std::string base = temp_dir("replay-planted");
  const std::string src = base + "/sender";
  const std::string run = base + "/received/run";
  fs::create_directories(src);
  fs::create_directories(base + "/received");
  fs::copy_file(module_path("test_marker"), src + "/libplugin.so");
  std::vector<std::string> modules = kModules;
  modules.push_back(src + "/libplugin.so");
  std::string text = walk_manifest(modules, kWalkOperators, 10);
  const size_t at = text.find(src + "/libplugin.so");
  REQUIRE(at != std::string::npos);
  text.replace(at, (src + "/libplugin.so").size(), "libplugin.so");
  write_text(src + "/manifest.yaml", text);
  REQUIRE(run_umlos("run '" + src + "/manifest.yaml' --run-dir '" + run + "' -q").exit_status == 0);
  // What arrives: the module inside the run folder, and the recorded
  // original manifest's folder leading into it (a link, as an archive
  // unpacked where the sender guessed could make it).
  fs::copy_file(src + "/libplugin.so", run + "/libplugin.so");
  fs::remove_all(src);
  fs::create_directory_symlink(run, src);

  // The receiver replays it: the module's constructor would leave a marker.
  const std::string marker = base + "/constructor-ran";
  const std::string env = "UMLOS_TEST_MARKER='" + marker + "'";
  const int refused = exit_code_for(UMLOS_PERMISSION_DENIED);

  CommandResult plain = run_umlos_env(env, "replay --verify '" + run + "'");
  INFO(plain.output);
  CHECK(plain.exit_status == refused);
  CHECK(plain.output.find("libplugin.so") != std::string::npos);
  CHECK(plain.output.find("lies in the run folder under review '" + run + "'") != std::string::npos);
  CHECK(plain.output.find("--trust-run-folder-modules") != std::string::npos);
  CHECK(!fs::exists(marker));

  // Naming the copy explicitly, or a folder whose entry links into the run
  // folder, does not make the folder's code trusted either.
  CommandResult copy = run_umlos_env(env, "replay --verify '" + run + "' --manifest '" + run + "/manifest.yaml'");
  INFO(copy.output);
  CHECK(copy.exit_status == refused);
  CHECK(!fs::exists(marker));
  const std::string links = base + "/links";
  fs::create_directories(links);
  for (const std::string& m : kModules) fs::create_symlink(m, links + "/" + fs::path(m).filename().string());
  fs::create_symlink(run + "/libplugin.so", links + "/libplugin.so");
  CommandResult linked = run_umlos_env(env, "replay --verify '" + run + "' --modules '" + links + "'");
  INFO(linked.output);
  CHECK(linked.exit_status == refused);
  CHECK(!fs::exists(marker));
  // An absolute path into the folder (a sender who guessed where it lies).
  std::string absolute = read_text(run + "/manifest.yaml");
  absolute.replace(absolute.find("\"libplugin.so\""), std::string("\"libplugin.so\"").size(),
                   "\"" + run + "/libplugin.so\"");
  write_text(run + "/manifest.yaml", absolute);
  CommandResult guessed = run_umlos_env(env, "replay --verify '" + run + "'");
  INFO(guessed.output);
  CHECK(guessed.exit_status == refused);
  CHECK(!fs::exists(marker));

  // Only the explicit option loads it (and then the replay is identical).
  CommandResult trusted = run_umlos_env(env, "replay --verify '" + run + "' --trust-run-folder-modules");
  INFO(trusted.output);
  CHECK(trusted.exit_status == 0);
  CHECK(trusted.output.rfind("identical", 0) == 0);
  CHECK(fs::exists(marker));
}
