// training.tests.cpp — training end to end: the shipped manifests train on
// their real data sets through real modules loaded from files, `umlos run`
// as a real process; determinism across runs and driver thread counts;
// bad data leaves only the failure record.
#include <catch2/catch.hpp>

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../skip.hpp"
#include "error.hpp"
#include "run_support.hpp"
#include "sha256.hpp"
#include "test_support.hpp"

using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Runs `manifest` with UML_OS_ROOT=root; it must fail naming `code`.
CommandResult run_expecting_failure(const std::string& manifest, const std::string& root, const char* code) {
  CommandResult r = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q '" + manifest + "'");
  INFO(r.output);
  CHECK(r.exit_status != 0);
  CHECK(r.output.find(code) != std::string::npos);
  return r;
}

}  // namespace

TEST_CASE("The default digits manifest reaches held-out accuracy of at least 0.97", "[training][slow]") {
  Run r = run_ok(pinned_manifest("digits"), "digits");
  const json end = records(r.trace()).back();
  REQUIRE(end["record"] == "run_end");
  CHECK(end["status"] == "success");
  CHECK(end["t"] == 1500);
  CHECK(end["val_accuracy"].get<double>() >= 0.97);
  CHECK(end["functional_fp"].is_string());
}

TEST_CASE("The breast cancer manifest reaches held-out accuracy of at least 0.95", "[training][slow]") {
  Run r = run_ok(pinned_manifest("breast_cancer"), "bc");
  const json end = records(r.trace()).back();
  CHECK(end["task_type"] == "binary");
  CHECK(end["val_accuracy"].get<double>() >= 0.95);
}

TEST_CASE("The diabetes manifest reaches a held-out R squared of at least 0.45", "[training][slow]") {
  Run r = run_ok(pinned_manifest("diabetes"), "diabetes");
  const json end = records(r.trace()).back();
  CHECK(end["task_type"] == "regression");
  CHECK(end["val_r2"].get<double>() >= 0.45);
}

TEST_CASE("Two runs of the same manifest write byte-identical traces", "[training][determinism][slow]") {
  const std::string m = variant("digits", "twice", {{"max_steps: 1500", "max_steps: 120"}});
  Run a = run(m, "twice-a"), b = run(m, "twice-b");
  REQUIRE(a.result.exit_status == 0);
  REQUIRE(b.result.exit_status == 0);
  const std::string ta = read_text(a.trace()), tb = read_text(b.trace());
  CHECK(ta.size() > 1000);
  CHECK(ta == tb);
  CHECK(state_fps(a.trace()).size() == 120);
}

TEST_CASE("A run places Update_v1's gradient buffers with the manifest's TMMU strategy and the report draws that plan",
          "[training][tmmu][report]") {
  const std::string m = variant("digits", "plan", {{"max_steps: 1500", "max_steps: 5"}});
  Run a = run(m, "plan-a"), b = run(m, "plan-b");
  REQUIRE(a.result.exit_status == 0);
  REQUIRE(b.result.exit_status == 0);
  const std::string svg = read_text(a.dir + "/memory_plan.svg");
  // The first plan of the run: Update_v1 at t 1, the byte strategy, at its lower bound.
  CHECK(svg.find("UML_OS.Update_v1 at t 1") != std::string::npos);
  CHECK(svg.find("UML_OS.TMMU.BytePlanner_v1") != std::string::npos);
  std::smatch fit;
  REQUIRE(std::regex_search(svg, fit, std::regex(R"(: (\d+) B, lower bound (\d+) B)")));
  CHECK(std::stoull(fit[1].str()) >= std::stoull(fit[2].str()));
  CHECK(std::stoull(fit[1].str()) <= std::stoull(fit[2].str()) * 11 / 10);
  CHECK(svg == read_text(b.dir + "/memory_plan.svg"));  // the plan is deterministic
  const std::string page = a.dir + "/report.html";
  REQUIRE(run_umlos("report '" + a.dir + "' -o '" + page + "'").exit_status == 0);
  const std::string html = read_text(page);
  CHECK(html.find("<h2>memory plan</h2>") != std::string::npos);
  // The plan is shown as an image of the file (base64), never parsed into the page.
  CHECK(html.find("<img alt=\"memory plan (RUN_DIR/memory_plan.svg)\" src=\"data:image/svg+xml;base64,") !=
        std::string::npos);

  // placement: temps plans nothing and draws nothing.
  const std::string t =
      variant("digits", "temps", {{"max_steps: 1500", "max_steps: 5"}, {"placement: tmmu", "placement: temps"}});
  Run c = run(t, "plan-temps");
  REQUIRE(c.result.exit_status == 0);
  CHECK_FALSE(fs::exists(c.dir + "/memory_plan.svg"));
}

TEST_CASE("The state_fp sequence is the same with 1 and 2 driver threads", "[training][determinism]") {
  const std::string one = variant("digits", "threads1", {{"max_steps: 1500", "max_steps: 80"}});
  const std::string two = variant(
      "digits", "threads2", {{"max_steps: 1500", "max_steps: 80"}, {"config: {threads: 1}", "config: {threads: 2}"}});
  Run a = run(one, "t1"), b = run(two, "t2");
  REQUIRE(a.result.exit_status == 0);
  REQUIRE(b.result.exit_status == 0);
  const std::vector<std::string> fa = state_fps(a.trace()), fb = state_fps(b.trace());
  REQUIRE(fa.size() == 80);
  CHECK(fa == fb);
  // The two manifests differ (driver config): different replay tokens, same experiment.
  CHECK(records(a.trace()).front()["replay_token"] != records(b.trace()).front()["replay_token"]);
}

TEST_CASE("A data set whose hash does not match leaves only the failure record in the namespace",
          "[training][dataset]") {
  const std::string m = variant("digits", "badhash", {{"0c01d4c317b51fbd", "1c01d4c317b51fbd"}});
  const std::string root = temp_dir("train-badhash");
  const CommandResult r = run_expecting_failure(m, root, "DATA_HASH_MISMATCH");
  INFO(r.output);
  // The job folder holds failure.json and nothing else.
  std::vector<fs::path> jobs;
  for (auto& e : fs::recursive_directory_iterator(fs::path(root) / "namespaces")) {
    if (e.is_regular_file()) jobs.push_back(e.path());
  }
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].filename() == "failure.json");
  const json f = json::parse(read_text(jobs[0].string()));
  CHECK(f["failure_code"] == "DATA_HASH_MISMATCH");
}

namespace {

// The only file under RUN_DIR and the job namespace after a failed run.
void expect_only_failure_record(const std::string& run_dir, const std::string& code) {
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(run_dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename() == "failure.json");
  const json f = json::parse(read_text(files[0].string()));
  CHECK(f["failure_code"] == code);
  CHECK(f["record"] == "failure");
}

}  // namespace

TEST_CASE(
    "Bad data through a run: each error names file, line and column, exits with its code, and leaves only the failure "
    "record",
    "[training][dataset][errors]") {
  const std::string dir = temp_dir("train-bad-data");
  const std::vector<std::string> digits = [&] {
    REQUIRE(
        std::system(("gzip -dc '" + std::string(UMLOS_SOURCE_DIR) + "/data/digits.csv.gz' > '" + dir + "/digits.csv'")
                        .c_str()) == 0);
    std::vector<std::string> rows;
    std::istringstream in(read_text(dir + "/digits.csv"));
    std::string line;
    while (std::getline(in, line)) rows.push_back(line);
    return rows;
  }();
  auto write_rows = [&](const std::string& name, std::vector<std::string> rows) {
    std::string text;
    for (const std::string& r : rows) text += r + "\n";
    write_text(dir + "/" + name, text);
    return dir + "/" + name;
  };
  std::vector<std::string> rows = digits;
  rows[10].replace(rows[10].find(','), 1, ",x");
  const std::string malformed = write_rows("malformed.csv", rows);
  rows = digits;
  rows[5] = rows[5].substr(0, rows[5].rfind(','));
  const std::string short_row = write_rows("short_row.csv", rows);

  struct Case {
    std::string name, manifest, code, says;
  };
  const std::string pinned = read_text(pinned_manifest("digits"));
  const size_t at = pinned.find("path: \"", pinned.find("datasets:"));
  REQUIRE(at != std::string::npos);
  const std::string original = pinned.substr(at + 6, pinned.find('"', at + 7) - at - 5);
  const std::vector<Case> cases = {
      {"malformed", variant("digits", "bad-malformed", {{original, "\"" + malformed + "\""}}), "DATA_MANIFEST_INVALID",
       malformed + ":11:3: field 2: expected a finite decimal number, found 'x"},
      {"columns", variant("digits", "bad-columns", {{original, "\"" + short_row + "\""}}), "DATA_MANIFEST_INVALID",
       "expected 65 fields (as on line 1), found 64"},
      {"missing", variant("digits", "bad-missing", {{original, "\"" + dir + "/absent.csv\""}}), "NOT_FOUND",
       "data file does not exist"},
      {"task", variant("digits", "bad-task", {{"task_type: multiclass", "task_type: multilabel"}}), "MANIFEST_INVALID",
       "key 'config.task_type': expected multiclass, binary or regression, found 'multilabel'"},
  };
  // A binary label outside {0, 1} (breast cancer: the sklearn header line, then rows).
  std::vector<std::string> bc;
  {
    std::istringstream in(read_text(std::string(UMLOS_SOURCE_DIR) + "/data/breast_cancer.csv"));
    std::string line;
    while (std::getline(in, line)) bc.push_back(line);
  }
  bc[4] = bc[4].substr(0, bc[4].rfind(',')) + ",2";
  const std::string bad_label = write_rows("bad_label.csv", bc);
  const std::string bc_pinned = read_text(pinned_manifest("breast_cancer"));
  const size_t bc_at = bc_pinned.find("path: \"", bc_pinned.find("datasets:"));
  const std::string bc_original = bc_pinned.substr(bc_at + 6, bc_pinned.find('"', bc_at + 7) - bc_at - 5);
  std::vector<Case> all = cases;
  all.push_back({"label", variant("breast_cancer", "bad-label", {{bc_original, "\"" + bad_label + "\""}}),
                 "DATA_MANIFEST_INVALID", bad_label + ":5:206: label: expected 0 or 1 (binary task), found 2"});
  for (const Case& c : all) {
    SECTION(c.name) {
      const std::string root = temp_dir("train-bad-" + c.name);
      CommandResult r =
          run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --run-dir '" + root + "/run' '" + c.manifest + "'");
      INFO(r.output);
      CHECK(r.exit_status != 0);
      CHECK(r.output.find(c.code + ": ") != std::string::npos);
      CHECK(r.output.find(c.says) != std::string::npos);
      expect_only_failure_record(root + "/run", c.code);
    }
  }
}

TEST_CASE("A non-finite objective stops the run with INVALID_OBJECTIVE before any update and leaves the failure record",
          "[training][errors]") {
  // lambda_rec at 1e308 makes the weighted gradient overflow at t 1.
  const std::string m =
      variant("digits", "nan", {{"max_steps: 1500", "max_steps: 20"}, {"lambda_rec: 1.0", "lambda_rec: 1.0e+308"}});
  Run r = run(m, "nan");
  INFO(r.result.output);
  CHECK(r.result.exit_status == umlos::exit_code_for(UMLOS_INVALID_OBJECTIVE));
  const json f = json::parse(read_text(r.dir + "/failure.json"));
  CHECK(f["failure_code"] == "INVALID_OBJECTIVE");
  CHECK(f["t"] == 1);
  CHECK(f["state_fp_t"].is_null());  // no state after an update exists: none was applied
  CHECK(state_fps(r.trace()).empty());
}

TEST_CASE("A namespace component that would leave UML_OS_ROOT is refused", "[training][namespace]") {
  const std::string m = variant("digits", "escape", {{"name: digits\n", "name: digits\nnamespace: {org: \"..\"}\n"}});
  const std::string root = temp_dir("train-escape");
  const CommandResult r = run_expecting_failure(m, root, "MANIFEST_INVALID");
  INFO(r.output);
  CHECK(r.output.find("namespace.org") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(root) / "namespaces"));
}

TEST_CASE("A job folder that a symbolic link would move outside UML_OS_ROOT is refused", "[training][namespace]") {
  const std::string m = variant("digits", "symlink", {{"max_steps: 1500", "max_steps: 2"}});
  const std::string root = temp_dir("train-symlink"), outside = temp_dir("train-outside");
  fs::create_directories(fs::path(root) / "namespaces");
  fs::create_directory_symlink(outside, fs::path(root) / "namespaces" / "default");
  const CommandResult r = run_expecting_failure(m, root, "NAMESPACE_VIOLATION");
  INFO(r.output);
  CHECK(fs::is_empty(outside));
}

TEST_CASE("A policy rule with a syntax error fails at bootstrap with its column, leaving only the failure record",
          "[training][policy]") {
  const std::string m = variant("digits", "badrule", {{"cond: \"t mod 250 == 0\"", "cond: \"t mod 250 === 0\""}});
  const std::string root = temp_dir("train-badrule");
  const CommandResult r = run_expecting_failure(m, root, "POLICY_INVALID");
  INFO(r.output);
  CHECK(r.output.find("policy.rules[0].cond") != std::string::npos);
  CHECK(r.output.find("column") != std::string::npos);
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(fs::path(root) / "namespaces")) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename() == "failure.json");
  CHECK(json::parse(read_text(files[0].string()))["t"] == 0);
}

namespace {

// digits_augment runs the symbolic module, which a build may leave out.
#ifdef UMLOS_TEST_HAVE_SYMBOLIC
#define SKIP_WITHOUT_SYMBOLIC() (void)0
#else
#define SKIP_WITHOUT_SYMBOLIC() \
  UMLOS_SKIP("digits_augment needs libumlos_symbolic.so, not built here (UMLOS_MODULE_SYMBOLIC=OFF)")
#endif

// digits_augment shortened to `steps`, augmenting at t = `augment_at` and
// checkpointing every 40 steps.
std::string short_augment_variant(const std::string& tag, int steps, int augment_at) {
  return variant("digits_augment", tag,
                 {{"max_steps: 600", "max_steps: " + std::to_string(steps)},
                  {"t == 300 and state == S_P", "t == " + std::to_string(augment_at) + " and state == S_P"},
                  {"checkpoint_every: 250", "checkpoint_every: 40"}});
}

// Starts `umlos run -q --run-dir DIR MANIFEST` as a child process and kills
// it with SIGKILL once its trace holds at least `kill_at` iter records.
// Returns the number of iter records present when the kill landed.
size_t run_and_kill(const std::string& manifest, const std::string& root, const std::string& dir, size_t kill_at) {
  const pid_t pid = spawn_run(manifest, root, dir);
  const std::string trace = dir + "/trace.jsonl";
  size_t iters = 0;
  for (int spin = 0; spin < 60000; ++spin) {
    iters = 0;
    if (fs::exists(trace)) {
      const std::string text = read_text(trace);
      for (size_t at = text.find("\"record\":\"iter\""); at != std::string::npos;
           at = text.find("\"record\":\"iter\"", at + 1))
        ++iters;
    }
    if (iters >= kill_at) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return iters;  // finished before the kill point
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return iters;
}

// Runs `manifest` in a fresh UML_OS_ROOT, kills it once `kill_at` iterations
// are in its trace and resumes it, which must succeed; returns the run folder.
std::string kill_and_resume(const std::string& manifest, const std::string& tag, size_t kill_at) {
  const std::string root = temp_dir(tag + "-" + std::to_string(kill_at));
  const std::string dir = root + "/run";
  const size_t landed = run_and_kill(manifest, root, dir, kill_at);
  INFO("killed after " << landed << " iterations (target " << kill_at << ")");
  CommandResult r = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --resume '" + dir + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  return dir;
}

}  // namespace

TEST_CASE("A run killed with SIGKILL and resumed ends exactly like an uninterrupted run",
          "[training][checkpoint][slow]") {
  const std::string m = variant(
      "digits", "kill", {{"max_steps: 1500", "max_steps: 160"}, {"checkpoint_every: 250", "checkpoint_every: 40"}});
  Run whole = run(m, "kill-whole");
  REQUIRE(whole.result.exit_status == 0);
  const std::string trace = read_text(whole.trace());
  const std::vector<std::string> fps = state_fps(whole.trace());
  REQUIRE(fps.size() == 160);
  // Two uninterrupted runs write the same checkpoint bytes.
  Run again = run(m, "kill-again");
  REQUIRE(again.result.exit_status == 0);
  for (const char* ck : {"ckpt_00000040.pb", "ckpt_00000160.pb"}) {
    CHECK(read_text(whole.dir + "/checkpoints/" + ck) == read_text(again.dir + "/checkpoints/" + ck));
  }
  // Kill points spread over the run (between checkpoints, on one, late).
  for (size_t kill_at : {23u, 80u, 117u, 151u}) {
    // Before the first checkpoint (t < 40) the resume starts again from t = 0.
    const std::string dir = kill_and_resume(m, "train-kill", kill_at);
    INFO("kill target " << kill_at);
    CHECK(state_fps(dir + "/trace.jsonl").back() == fps.back());
    CHECK(read_text(dir + "/trace.jsonl") == trace);
    CHECK(read_text(dir + "/tape.bin") == read_text(whole.dir + "/tape.bin"));
  }
}

TEST_CASE("checkpoint_keep keeps only the newest checkpoints, a negative count is refused before the run starts",
          "[training][checkpoint]") {
  const std::string m = variant(
      "digits", "keep",
      {{"max_steps: 1500", "max_steps: 100"}, {"checkpoint_every: 250", "checkpoint_every: 20\n  checkpoint_keep: 2"}});
  Run r = run_ok(m, "keep");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(r.dir + "/checkpoints")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"ckpt_00000080.pb", "ckpt_00000100.pb", "latest"});

  const std::string bad =
      variant("digits", "keep-bad", {{"checkpoint_every: 250", "checkpoint_every: 20\n  checkpoint_keep: -1"}});
  Run b = run(bad, "keep-bad");
  INFO(b.result.output);
  CHECK(b.result.exit_status == umlos::exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK(b.result.output.find("config.checkpoint_keep") != std::string::npos);
  // Refused while the manifest is read: no run folder was made, and the
  // failure record went to stderr.
  CHECK_FALSE(fs::exists(b.dir));
  CHECK(b.result.output.find("\"failure_code\":\"MANIFEST_INVALID\"") != std::string::npos);
}

TEST_CASE("A run with an augment step, killed before or after it and resumed, ends exactly like an uninterrupted run",
          "[training][checkpoint][symbolic][slow]") {
  SKIP_WITHOUT_SYMBOLIC();
  // digits_augment shortened: augment at t = 60, checkpoints every 40, so a
  // resume from t = 40 crosses the augment step and one from t = 80 restores
  // the prototypes and equations from the checkpoint.
  const std::string m = short_augment_variant("kill", 120, 60);
  Run whole = run_ok(m, "kill-aug-whole");
  const std::vector<json> recs = records(whole.trace());
  // The augment step's record carries the equations, one per prototype.
  json found;
  for (const json& r : recs) {
    if (r["record"] != "iter") continue;
    if (r["t"] == 60) {
      REQUIRE(r["action"] == "augment");
      REQUIRE(r.contains("equations"));
      CHECK(r["equations"].size() == 10);
      CHECK(r["equations"][0].get<std::string>().rfind("y[", 0) == 0);
      found = r["equations"];
    } else {
      CHECK_FALSE(r.contains("equations"));
    }
  }
  REQUIRE(found.is_array());
  // The report prints them.
  const std::string page = whole.dir + "/report.html";
  CommandResult rep = run_umlos("report '" + whole.dir + "' -o '" + page + "'");
  REQUIRE(rep.exit_status == 0);
  const std::string html = read_text(page);
  CHECK(html.find("symbolic prototypes") != std::string::npos);
  CHECK(html.find("augment at t = 60") != std::string::npos);
  CHECK(html.find("<code>" + found[0].get<std::string>() + "</code>") != std::string::npos);

  const std::string trace = read_text(whole.trace());
  for (size_t kill_at : {50u, 95u}) {
    const std::string dir = kill_and_resume(m, "train-kill-aug", kill_at);
    INFO("kill target " << kill_at);
    CHECK(read_text(dir + "/trace.jsonl") == trace);
    CHECK(read_text(dir + "/tape.bin") == read_text(whole.dir + "/tape.bin"));
  }
}

TEST_CASE("A checkpoint whose stored equation uses an operator outside the set fails on resume naming the equation",
          "[training][checkpoint][symbolic][errors][slow]") {
  SKIP_WITHOUT_SYMBOLIC();
  const std::string m = short_augment_variant("eqckpt", 60, 20);
  Run r = run_ok(m, "eqckpt");
  // Rewrite one equation in ckpt_00000040.pb with the same length ("cos(" ->
  // "tan(", an operator outside the set) and a valid content_sha256: a
  // checkpoint that is well-formed as a file but holds a bad equation.
  const std::string file = r.dir + "/checkpoints/ckpt_00000040.pb";
  std::string bytes = read_text(file);
  const size_t trailer = 35;  // content_sha256: tag a2 06, length 0x20, 32 bytes
  REQUIRE(static_cast<unsigned char>(bytes[bytes.size() - trailer]) == 0xa2);
  std::string body = bytes.substr(0, bytes.size() - trailer);
  const size_t eq = body.find("y[");
  REQUIRE(eq != std::string::npos);
  size_t op = body.find("cos(", eq);
  if (op == std::string::npos || op > body.find('\0', eq)) op = body.find("sin(", eq);
  REQUIRE(op != std::string::npos);
  body.replace(op, 4, "tan(");
  const umlos::Digest d = umlos::sha256(std::vector<uint8_t>(body.begin(), body.end()));
  write_text(file, body + std::string("\xa2\x06\x20", 3) + std::string(d.begin(), d.end()));

  // From that checkpoint (the run's final one, t = 60, is the latest).
  CommandResult resumed =
      run_umlos_env("UML_OS_ROOT='" + r.dir + "/..'", "run -q --resume '" + r.dir + "' --resume-from '" + file + "'");
  INFO(resumed.output);
  CHECK(resumed.exit_status == umlos::exit_code_for(UMLOS_EQUATION_INVALID));
  CHECK(resumed.output.find("EQUATION_INVALID") != std::string::npos);
  CHECK(resumed.output.find("tan(") != std::string::npos);  // the equation is named
  const json f = json::parse(read_text(r.dir + "/failure.json"));
  CHECK(f["failure_code"] == "EQUATION_INVALID");
  CHECK(f["t"] == 41);
}

namespace {

// Every file of a run folder that the run's results live in, by name:
// the trace, the tape, the checkpoints.
std::map<std::string, std::string> result_files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const char* f : {"trace.jsonl", "tape.bin"}) out[f] = read_text(dir + "/" + f);
  if (fs::exists(dir + "/checkpoints"))
    for (const auto& e : fs::directory_iterator(dir + "/checkpoints"))
      out["checkpoints/" + e.path().filename().string()] = read_text(e.path().string());
  return out;
}

bool overlapped(const std::string& dir) {
  return json::parse(read_text(dir + "/profile.json")).at("state_fp_overlapped").get<bool>();
}

bool paired(const std::string& dir) {
  return json::parse(read_text(dir + "/profile.json")).at("state_fp_paired").get<bool>();
}

}  // namespace

TEST_CASE("Hashing each step's state fingerprint on a second thread changes no byte of the trace, tape or checkpoints",
          "[training][determinism][fingerprint]") {
  const std::string m = variant("digits", "overlap", {{"max_steps: 1500", "max_steps: 60"}});
  Run a = run_ok(m, "overlap-on", "--profile --checkpoint-every 25");
  Run b = run_ok(m, "overlap-off", "--profile --checkpoint-every 25 --sync-fingerprints");
  // A single process hashes on a thread wherever it may use two CPUs.
  CHECK(overlapped(a.dir) == (usable_cores() > 1));
  CHECK(paired(a.dir) == (usable_cores() == 1));
  CHECK_FALSE(overlapped(b.dir));
  const auto fa = result_files(a.dir), fb = result_files(b.dir);
  for (const char* c : {"checkpoints/ckpt_00000025.pb", "checkpoints/ckpt_00000050.pb", "checkpoints/ckpt_00000060.pb"})
    CHECK(fa.count(c) == 1);
  CHECK(fa == fb);
  CHECK(state_fps(a.trace()).size() == 60);
}

TEST_CASE(
    "Hashing the state fingerprints two steps at a time changes no byte of the trace, tape or checkpoints, odd "
    "checkpoints and an odd last step included",
    "[training][determinism][fingerprint]") {
  // Checkpoints at 25, 50 and the last step, 61: a checkpoint or the end
  // settles a step whose partner has not come (hashed alone), the others
  // go in pairs.
  const std::string m = variant("digits", "pairs", {{"max_steps: 1500", "max_steps: 61"}});
  Run a = run_ok(m, "pairs-on", "--profile --checkpoint-every 25 --paired-fingerprints");
  Run b = run_ok(m, "pairs-off", "--profile --checkpoint-every 25 --sync-fingerprints");
  CHECK(paired(a.dir));
  CHECK_FALSE(overlapped(a.dir));
  CHECK_FALSE(paired(b.dir));
  const auto fa = result_files(a.dir), fb = result_files(b.dir);
  CHECK(fa.count("checkpoints/ckpt_00000061.pb") == 1);
  CHECK(fa == fb);
  CHECK(state_fps(a.trace()).size() == 61);
  // Both switches at once is a usage error, not a silent choice.
  const CommandResult both = run_umlos("run -q --sync-fingerprints --paired-fingerprints '" + m + "'");
  CHECK(both.exit_status != 0);
  CHECK(both.output.find("give one") != std::string::npos);
}

TEST_CASE(
    "A single process that may use one CPU hashes its state fingerprints two steps at a time, with the files of one "
    "hashing in place",
    "[training][determinism][fingerprint]") {
  // The umlos process inherits this test's CPU set: one CPU, then back.
  cpu_set_t all, one;
  CPU_ZERO(&all);
  REQUIRE(::sched_getaffinity(0, sizeof all, &all) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  const std::string m = variant("digits", "one-cpu", {{"max_steps: 1500", "max_steps: 31"}});
  Run a = run_ok(m, "one-cpu-default", "--profile --checkpoint-every 10");
  REQUIRE(::sched_setaffinity(0, sizeof all, &all) == 0);
  Run b = run_ok(m, "one-cpu-sync", "--profile --checkpoint-every 10 --sync-fingerprints");
  CHECK(paired(a.dir));
  CHECK_FALSE(overlapped(a.dir));
  CHECK(state_fps(a.trace()).size() == 31);
  CHECK(result_files(a.dir) == result_files(b.dir));
}

TEST_CASE("A run that fails while a step's state fingerprint is still being hashed records that step first",
          "[training][errors][fingerprint]") {
  // At t 7 the policy chooses probe, which this manifest leaves out: the
  // run fails while step 6's digest is on the worker.
  const std::string m = variant("digits", "overlap-fail",
                                {{"max_steps: 1500", "max_steps: 20"},
                                 {"  probe_op: UML_OS.Cluster.SphericalKMeans_v1", "  # no probe_op"},
                                 {"t mod 250 == 0", "t == 7"}});
  Run a = run(m, "overlap-fail-on", "--profile");
  Run b = run(m, "overlap-fail-off", "--sync-fingerprints");
  Run c = run(m, "overlap-fail-pairs", "--paired-fingerprints");  // step 6 was hashed with step 5
  INFO(a.result.output);
  CHECK(c.result.exit_status == a.result.exit_status);
  CHECK(read_text(c.trace()) == read_text(b.trace()));
  CHECK(read_text(c.dir + "/tape.bin") == read_text(b.dir + "/tape.bin"));
  CHECK(read_text(c.dir + "/failure.json") == read_text(b.dir + "/failure.json"));
  // Failing at t 8 instead, step 7 is still waiting for its partner: the
  // failure hashes it alone and records it.
  const std::string m8 = variant("digits", "overlap-fail-8",
                                 {{"max_steps: 1500", "max_steps: 20"},
                                  {"  probe_op: UML_OS.Cluster.SphericalKMeans_v1", "  # no probe_op"},
                                  {"t mod 250 == 0", "t == 8"}});
  Run p8 = run(m8, "overlap-fail-8-pairs", "--paired-fingerprints");
  Run s8 = run(m8, "overlap-fail-8-off", "--sync-fingerprints");
  CHECK(p8.result.exit_status == a.result.exit_status);
  CHECK(state_fps(p8.trace()).size() == 7);
  CHECK(read_text(p8.trace()) == read_text(s8.trace()));
  CHECK(read_text(p8.dir + "/tape.bin") == read_text(s8.dir + "/tape.bin"));
  CHECK(read_text(p8.dir + "/failure.json") == read_text(s8.dir + "/failure.json"));
  CHECK(a.result.exit_status == umlos::exit_code_for(UMLOS_OPERATOR_NOT_FOUND));
  CHECK(b.result.exit_status == a.result.exit_status);
  CHECK(state_fps(a.trace()).size() == 6);
  CHECK(read_text(a.trace()) == read_text(b.trace()));
  CHECK(read_text(a.dir + "/tape.bin") == read_text(b.dir + "/tape.bin"));
  CHECK(read_text(a.dir + "/failure.json") == read_text(b.dir + "/failure.json"));
  const json f = json::parse(read_text(a.dir + "/failure.json"));
  CHECK(f["t"] == 7);
  const std::vector<json> rs = records(a.trace());
  REQUIRE(rs.size() == 8);  // run_header, iter 1-6, run_end
  CHECK(f["state_fp_t"] == rs[6]["state_fp"]);
}

TEST_CASE("A state fingerprint role of two operators, one bound elsewhere, gives the same trace overlapped or not",
          "[training][determinism][fingerprint]") {
  // One entry's digest goes to state_fp, the other's to another run value.
  // Only the last entry's state_fp stays in flight; an earlier digest is
  // settled as soon as its operator returns: on the thread (one digest at a
  // time) the previous step's is settled first; in pairs the previous
  // step's state_fp may still be kept, the earlier digest is hashed with it,
  // and each must get its own.
  const char* plain = "    - UML_OS.StateFingerprint_v1\n";
  const char* shadow = "    - op: UML_OS.StateFingerprint_v1\n      outputs: {state_fp: state_fp_shadow}\n";
  for (bool shadow_first : {false, true}) {
    INFO((shadow_first ? "the other value first" : "state_fp first"));
    const std::string tag = shadow_first ? "overlap-two-b" : "overlap-two-a";
    const std::string m = variant("digits", tag,
                                  {{"max_steps: 1500", "max_steps: 12"},
                                   {"  state_fingerprint_op: UML_OS.StateFingerprint_v1",
                                    std::string("  state_fingerprint_op:\n") + (shadow_first ? shadow : plain) +
                                        (shadow_first ? plain : shadow) + "  #"}});
    Run a = run_ok(m, tag + "-on", "--profile");
    Run b = run_ok(m, tag + "-off", "--sync-fingerprints");
    Run c = run_ok(m, tag + "-pairs", "--profile --paired-fingerprints");
    CHECK(overlapped(a.dir) == (usable_cores() > 1));
    CHECK(paired(c.dir));
    CHECK(state_fps(a.trace()).size() == 12);
    CHECK(result_files(a.dir) == result_files(b.dir));
    CHECK(result_files(c.dir) == result_files(b.dir));
  }
}

TEST_CASE(
    "Gradient clipping scales every step whose norm passes clip_norm, and the states are the same at 1 and 3 driver "
    "threads",
    "[training][update]") {
  // At clip_norm 0.05 every step of digits clips: the norm's sum of squares
  // runs twice (before and after scaling), over the driver's pool.
  auto clipped = [](int threads) {
    return variant("digits", "clip" + std::to_string(threads),
                   {{"max_steps: 1500", "max_steps: 40"},
                    {"clip_norm: 5.0", "clip_norm: 0.05"},
                    {"config: {threads: 1}", "config: {threads: " + std::to_string(threads) + "}"}});
  };
  Run one = run_ok(clipped(1), "clip1");
  Run three = run_ok(clipped(3), "clip3");
  Run plain = run_ok(variant("digits", "noclip", {{"max_steps: 1500", "max_steps: 40"}}), "noclip");
  int steps = 0;
  for (const json& r : records(one.trace())) {
    if (!r.contains("grad_norm") || !r.contains("state_fp")) continue;
    ++steps;
    CHECK(r["grad_norm"].get<double>() > 0.05);
  }
  CHECK(steps == 40);
  const std::vector<std::string> a = state_fps(one.trace());
  CHECK(a.size() == 40);
  CHECK(a == state_fps(three.trace()));
  CHECK(a.back() != state_fps(plain.trace()).back());  // the clipping changed the updates
}
