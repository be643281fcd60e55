// run_folder.tests.cpp — a run writes only into the folder it holds: job
// folders of different manifests never collide, a folder holding a run is
// never reused, a held folder is refused to a second process, planted
// symbolic links are never written through, a failed trace write leaves
// whole records, stale temporaries go on resume, every run ends with a
// final checkpoint. `umlos` runs as a real process on the shipped manifests.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "error.hpp"
#include "fsutil.hpp"
#include "run_support.hpp"
#include "test_support.hpp"

using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// digits, 60 steps, checkpoints every 25: the last step (60) is not a
// multiple of checkpoint_every, like the shipped 600-step manifests.
std::string short_digits(const std::string& tag, const std::string& lr = "lr: 0.002") {
  return variant(
      "digits", tag,
      {{"max_steps: 1500", "max_steps: 60"}, {"checkpoint_every: 250", "checkpoint_every: 25"}, {"lr: 0.002", lr}});
}

// demo_walk (tiny state, small checkpoints), 200 steps.
std::string walk(const std::string& tag, const std::string& extra_config = "") {
  return variant("demo_walk", tag, {{"max_steps: 200", "max_steps: 200" + extra_config}});
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The job_id `umlos manifest hash` prints.
std::string job_of(const std::string& manifest) {
  const std::string out = run_umlos("manifest hash '" + manifest + "'").output;
  size_t at = out.find("job_id");
  REQUIRE(at != std::string::npos);
  at = out.find_first_not_of(' ', at + 6);
  return out.substr(at, 8);
}

bool is_link(const std::string& p) { return fs::is_symlink(fs::symlink_status(p)); }

// A completed run copied into a fresh folder (links copied as links).
std::string copy_run(const std::string& from, const std::string& tag) {
  const std::string to = temp_dir(tag) + "/run";
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return to;
}

void require_all_lines_whole(const std::string& trace) {
  const std::string text = read_text(trace);
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  size_t start = 0, n = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    INFO("line " << n << ": " << line.substr(0, 120));
    CHECK_FALSE(json::parse(line, nullptr, false).is_discarded());
    if (end == std::string::npos) break;
    start = end + 1;
    ++n;
  }
}

}  // namespace

TEST_CASE("Two manifests differing in one config value get separate job folders and the first run still resumes",
          "[runfolder][security][checkpoint]") {
  const std::string a = short_digits("jobid-a");
  const std::string b = short_digits("jobid-b", "lr: 0.003");
  const std::string root = temp_dir("jobid-root");
  const std::string env = "UML_OS_ROOT='" + root + "'";
  CommandResult ra = run_umlos_env(env, "run -q '" + a + "'");
  INFO(ra.output);
  REQUIRE(ra.exit_status == 0);
  const std::string experiment = root + "/namespaces/default/default/default/digits";
  REQUIRE(names_in(experiment).size() == 1);
  const std::string dir_a = experiment + "/" + names_in(experiment)[0];
  const std::string trace_a = read_text(dir_a + "/trace.jsonl");
  const std::string tape_a = read_text(dir_a + "/tape.bin");

  CommandResult rb = run_umlos_env(env, "run -q '" + b + "'");
  INFO(rb.output);
  REQUIRE(rb.exit_status == 0);
  // Each run its own folder; the first one's files untouched.
  REQUIRE(names_in(experiment).size() == 2);
  CHECK(read_text(dir_a + "/trace.jsonl") == trace_a);
  CHECK(read_text(dir_a + "/tape.bin") == tape_a);
  // The job_id is the one `umlos manifest hash` prints (manifest_hash).
  CHECK(job_of(a) == fs::path(dir_a).filename().string());
  CHECK(job_of(a) != job_of(b));
  // The first run resumes from its latest checkpoint to the same trace.
  CommandResult resumed = run_umlos_env(env, "run -q --resume '" + dir_a + "'");
  INFO(resumed.output);
  CHECK(resumed.exit_status == 0);
  CHECK(read_text(dir_a + "/trace.jsonl") == trace_a);
  CHECK(read_text(dir_a + "/tape.bin") == tape_a);
  // The same manifest again: another run of the job, in the job folder's
  // first free numbered sibling; the first run left as it was.
  CommandResult again = run_umlos_env(env, "run -q '" + a + "'");
  INFO(again.output);
  CHECK(again.exit_status == 0);
  CHECK(names_in(experiment).size() == 3);
  CHECK(read_text(dir_a + ".1/trace.jsonl").size() > 0);
  CHECK(read_text(dir_a + "/trace.jsonl") == trace_a);
  CHECK(read_text(dir_a + "/tape.bin") == tape_a);
  CHECK_FALSE(fs::exists(dir_a + "/failure.json"));
  // The recorded run and its rerun agree on every fingerprint.
  CHECK(read_text(dir_a + ".1/tape.bin") == tape_a);
}

TEST_CASE("A run into a folder that holds another run is refused with ALREADY_EXISTS and writes nothing there",
          "[runfolder][security]") {
  Run first = run_ok(walk("reuse-a"), "reuse");
  const std::vector<std::string> before = names_in(first.dir);
  const std::string trace = read_text(first.trace());
  // Another manifest into the same --run-dir.
  CommandResult r =
      run_umlos("run -q --run-dir '" + first.dir + "' '" + walk("reuse-b", "\n  checkpoint_every: 7") + "'");
  INFO(r.output);
  CHECK(r.exit_status == umlos::exit_code_for(UMLOS_ALREADY_EXISTS));
  CHECK(r.output.find(first.dir) != std::string::npos);
  CHECK(names_in(first.dir) == before);
  CHECK(read_text(first.trace()) == trace);
  // An empty folder made beforehand is fine.
  const std::string empty = temp_dir("reuse-empty");
  CHECK(run_umlos("run -q --run-dir '" + empty + "' '" + walk("reuse-a") + "'").exit_status == 0);
}

TEST_CASE("A run folder held by a running umlos is refused to a second run and to a resume, naming the folder",
          "[runfolder][security]") {
  const std::string m = variant("digits", "held", {{"max_steps: 1500", "max_steps: 400"}});
  const std::string root = temp_dir("held");
  const std::string dir = root + "/run";
  const pid_t pid = spawn_run(m, root, dir);
  // Wait until the first run is in its loop.
  bool running = false;
  for (int spin = 0; spin < 60000 && !running; ++spin) {
    running = fs::exists(dir + "/trace.jsonl") && read_text(dir + "/trace.jsonl").find("\"iter\"") != std::string::npos;
    if (!running) ::usleep(1000);
  }
  REQUIRE(running);
  const std::string env = "UML_OS_ROOT='" + root + "'";
  CommandResult second = run_umlos_env(env, "run -q --run-dir '" + dir + "' '" + m + "'");
  CommandResult resume = run_umlos_env(env, "run -q --resume '" + dir + "'");
  int status = 0;
  ::waitpid(pid, &status, 0);
  INFO(second.output);
  INFO(resume.output);
  CHECK(second.exit_status == umlos::exit_code_for(UMLOS_FAILED_PRECONDITION));
  CHECK(resume.exit_status == umlos::exit_code_for(UMLOS_FAILED_PRECONDITION));
  CHECK(second.output.find(dir) != std::string::npos);
  CHECK(resume.output.find("held by another running umlos process") != std::string::npos);
  // The first run finished undisturbed, and nobody wrote a failure record.
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(dir + "/failure.json"));
  CHECK(records(dir + "/trace.jsonl").back()["status"] == "success");
}

TEST_CASE("A symbolic link planted as a run file or as the run folder is never written through",
          "[runfolder][security]") {
  const std::string secret = "not yours\n";
  SECTION("a new run into a folder holding a link at trace.jsonl or tape.bin is refused") {
    for (const char* name : {"trace.jsonl", "tape.bin"}) {
      const std::string root = temp_dir("link-new");
      const std::string target = root + "/target";
      write_text(target, secret);
      fs::create_directories(root + "/run");
      fs::create_symlink(target, root + "/run/" + name);
      CommandResult r = run_umlos("run -q --run-dir '" + root + "/run' '" + walk("link-new") + "'");
      INFO(r.output);
      CHECK(r.exit_status == umlos::exit_code_for(UMLOS_ALREADY_EXISTS));
      CHECK(read_text(target) == secret);
      CHECK(names_in(root + "/run") == std::vector<std::string>{name});
      CHECK(is_link(root + "/run/" + name));
    }
  }
  SECTION("a run folder that is a link is refused, for a new run and for a resume") {
    const std::string root = temp_dir("link-folder");
    fs::create_directories(root + "/real");
    fs::create_symlink(root + "/real", root + "/run");
    CommandResult r = run_umlos("run -q --run-dir '" + root + "/run' '" + walk("link-folder") + "'");
    INFO(r.output);
    CHECK(r.exit_status == umlos::exit_code_for(UMLOS_NAMESPACE_VIOLATION));
    CHECK(r.output.find("symbolic link") != std::string::npos);
    CHECK(fs::is_empty(root + "/real"));
    // The same with a trailing slash (which would make the kernel follow it).
    CHECK(run_umlos("run -q --run-dir '" + root + "/run/' '" + walk("link-folder") + "'").exit_status ==
          umlos::exit_code_for(UMLOS_NAMESPACE_VIOLATION));
    CHECK(fs::is_empty(root + "/real"));
    // A job folder planted as a link under the namespace tree.
    const std::string m = walk("link-job");
    const std::string job = job_of(m);
    const std::string ns = root + "/namespaces/default/default/default/demo_walk";
    fs::create_directories(ns);
    fs::create_directories(root + "/elsewhere");
    fs::create_symlink(root + "/elsewhere", ns + "/" + job);
    CommandResult j = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q '" + m + "'");
    INFO(j.output);
    CHECK(j.exit_status == umlos::exit_code_for(UMLOS_NAMESPACE_VIOLATION));
    CHECK(fs::is_empty(root + "/elsewhere"));
  }
  SECTION("a resume refuses a run folder holding a link at any run file and leaves the target as it was") {
    Run whole = run_ok(walk("link-resume", "\n  checkpoint_every: 50"), "link-resume");
    for (const char* name : {"trace.jsonl", "tape.bin", "manifest.cbor", "failure.json", "profile.json",
                             "checkpoints/latest", "checkpoints/ckpt_00000150.pb", "checkpoints"}) {
      const std::string dir = copy_run(whole.dir, "link-resume-copy");
      const std::string target = dir + "/../target";
      if (std::string(name) == "checkpoints") {
        fs::rename(dir + "/checkpoints", dir + "/../ckdir");
        fs::create_symlink(dir + "/../ckdir", dir + "/checkpoints");
      } else {
        write_text(target, secret);
        fs::remove(dir + "/" + name);
        fs::create_symlink(target, dir + "/" + name);
      }
      CommandResult r = run_umlos("run -q --resume '" + dir + "'");
      INFO(name << ": " << r.output);
      CHECK(r.exit_status == umlos::exit_code_for(UMLOS_NAMESPACE_VIOLATION));
      CHECK(r.output.find(name) != std::string::npos);
      if (std::string(name) != "checkpoints") CHECK(read_text(target) == secret);
      CHECK(is_link(dir + "/" + name));
      const bool record_written = fs::exists(dir + "/failure.json") && !is_link(dir + "/failure.json");
      CHECK_FALSE(record_written);
    }
  }
  SECTION("a FIFO planted in a run folder is refused on resume without hanging") {
    Run whole = run(walk("fifo-resume", "\n  checkpoint_every: 50"), "fifo-resume");
    REQUIRE(whole.result.exit_status == 0);
    fs::remove(whole.trace());
    REQUIRE(::mkfifo(whole.trace().c_str(), 0644) == 0);
    CommandResult r = run_umlos("run -q --resume '" + whole.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == umlos::exit_code_for(UMLOS_NAMESPACE_VIOLATION));
    CHECK(r.output.find("FIFO") != std::string::npos);
  }
}

TEST_CASE("write_file_atomic never writes through a link planted at its temporary name",
          "[runfolder][security][fsutil]") {
  const std::string dir = temp_dir("atomic-link");
  const std::string file = dir + "/out.json";
  write_text(dir + "/target", "not yours\n");
  fs::create_symlink(dir + "/target", file + ".tmp." + std::to_string(::getpid()));
  umlos::write_file_atomic(file, std::string("mine\n"));
  CHECK(read_text(dir + "/target") == "not yours\n");
  CHECK(read_text(file) == "mine\n");
  CHECK_FALSE(is_link(file));
  CHECK_FALSE(fs::exists(fs::symlink_status(file + ".tmp." + std::to_string(::getpid()))));
}

TEST_CASE("A trace write that fails on a full disk leaves only whole records, and the run resumes to the same end",
          "[runfolder][checkpoint]") {
  const std::string m = variant("demo_walk", "fsize", {{"max_steps: 200", "max_steps: 2000\n  checkpoint_every: 500"}});
  Run whole = run(m, "fsize-whole");
  REQUIRE(whole.result.exit_status == 0);
  const std::string trace = read_text(whole.trace());
  const std::string tape = read_text(whole.dir + "/tape.bin");
  // A file size limit cuts the trace in the middle of the record of t = 1200
  // (every other file of this run stays smaller); EFBIG stands for ENOSPC.
  // It is set once the run is past bootstrap (module loading writes memfds
  // of the modules' size).
  size_t at = 0;
  for (int line = 0; line < 1200; ++line) at = trace.find('\n', at) + 1;
  const rlim_t limit = at + 40;
  const std::string root = temp_dir("fsize");
  const std::string dir = root + "/run";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // kept across exec: writes fail with EFBIG instead
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 2);
    ::execl(UMLOS_EXE, UMLOS_EXE, "run", "-q", "--run-dir", dir.c_str(), m.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  while (!fs::exists(dir + "/trace.jsonl")) ::usleep(200);
  const struct rlimit rl = {limit, limit};
  REQUIRE(::prlimit(pid, RLIMIT_FSIZE, &rl, nullptr) == 0);
  REQUIRE(fs::file_size(dir + "/trace.jsonl") < limit - 1000);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == umlos::exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  const json failure = json::parse(read_text(dir + "/failure.json"));
  CHECK(failure["failure_code"] == "RESOURCE_EXHAUSTED");
  // No partial line: every line is a whole record, the trace a prefix of the
  // uninterrupted one.
  require_all_lines_whole(dir + "/trace.jsonl");
  const std::string cut = read_text(dir + "/trace.jsonl");
  CHECK(cut.size() <= limit);
  CHECK(trace.compare(0, cut.size(), cut) == 0);
  // What a crash mid-write leaves (part of a line, part of a tape event) is
  // cut back to the checkpoint on resume.
  CHECK(fs::exists(dir + "/checkpoints/ckpt_00001000.pb"));
  { std::ofstream(dir + "/trace.jsonl", std::ios::app) << "{\"record\":\"iter\",\"t\":1"; }
  { std::ofstream(dir + "/tape.bin", std::ios::app | std::ios::binary) << "UTEV\x01\x02"; }
  CommandResult r = run_umlos("run -q --resume '" + dir + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  // (demo_walk's sil_mean is not run state, so a resumed walk logs null
  // for it until the next probe: the records are compared without it.)
  auto without_sil = [](const std::string& trace_file) {
    std::vector<json> out = records(trace_file);
    for (json& r : out) r.erase("sil_mean");
    return out;
  };
  CHECK(without_sil(dir + "/trace.jsonl") == without_sil(whole.trace()));
  require_all_lines_whole(dir + "/trace.jsonl");
  CHECK(read_text(dir + "/tape.bin") == tape);
  CHECK_FALSE(fs::exists(dir + "/failure.json"));
}

TEST_CASE("Resume removes the temporary files an interrupted atomic write left, and only those",
          "[runfolder][checkpoint]") {
  Run whole = run(walk("stale", "\n  checkpoint_every: 50"), "stale");
  REQUIRE(whole.result.exit_status == 0);
  const std::string trace = read_text(whole.trace());
  write_text(whole.dir + "/checkpoints/ckpt_00000200.pb.tmp.4242", "half a checkpoint");
  write_text(whole.dir + "/checkpoints/latest.tmp.17", "ckpt_");
  write_text(whole.dir + "/manifest.cbor.tmp.99999", "");
  write_text(whole.dir + "/notes.tmp.txt", "the user's");  // not our pattern
  CommandResult r = run_umlos("run -q --resume '" + whole.dir + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(read_text(whole.trace()) == trace);
  CHECK_FALSE(fs::exists(whole.dir + "/checkpoints/ckpt_00000200.pb.tmp.4242"));
  CHECK_FALSE(fs::exists(whole.dir + "/checkpoints/latest.tmp.17"));
  CHECK_FALSE(fs::exists(whole.dir + "/manifest.cbor.tmp.99999"));
  CHECK(read_text(whole.dir + "/notes.tmp.txt") == "the user's");
}

TEST_CASE("Every run that ends writes a final checkpoint, whatever checkpoint_every is", "[runfolder][checkpoint]") {
  // 60 steps, checkpoints every 25: the last one would be t = 50.
  Run r = run_ok(short_digits("final"), "final");
  CHECK(names_in(r.dir + "/checkpoints") ==
        std::vector<std::string>{"ckpt_00000025.pb", "ckpt_00000050.pb", "ckpt_00000060.pb", "latest"});
  CHECK(read_text(r.dir + "/checkpoints/latest") == "ckpt_00000060.pb\n");
  // No checkpoint_every at all: the final one only.
  Run w = run(walk("final-walk"), "final-walk");
  REQUIRE(w.result.exit_status == 0);
  CHECK(names_in(w.dir + "/checkpoints") == std::vector<std::string>{"ckpt_00000200.pb", "latest"});
  // A resume of the finished run from its final checkpoint rewrites the same end.
  const std::string trace = read_text(r.trace());
  CommandResult again = run_umlos("run -q --resume '" + r.dir + "'");
  INFO(again.output);
  CHECK(again.exit_status == 0);
  CHECK(read_text(r.trace()) == trace);
}

TEST_CASE("A run killed before its first checkpoint resumes from t = 0, another manifest's folder is refused",
          "[runfolder][checkpoint]") {
  const std::string m = walk("restart", "\n  checkpoint_every: 150");
  Run whole = run(m, "restart");
  REQUIRE(whole.result.exit_status == 0);
  const std::string trace = read_text(whole.trace());
  const std::string tape = read_text(whole.dir + "/tape.bin");
  // What a kill at t = 70 leaves: no checkpoint, a trace and tape cut short.
  const std::string dir = copy_run(whole.dir, "restart-copy");
  fs::remove_all(dir + "/checkpoints");
  fs::resize_file(dir + "/trace.jsonl", trace.size() / 3);
  fs::resize_file(dir + "/tape.bin", 16 + 70 * 64 + 10);
  // Another manifest with this folder: refused, nothing changed.
  const std::string other = walk("restart-other", "\n  checkpoint_every: 151");
  CommandResult refused = run_umlos("run -q '" + other + "' --resume '" + dir + "'");
  INFO(refused.output);
  CHECK(refused.exit_status == umlos::exit_code_for(UMLOS_CHECKPOINT_INVALID));
  CHECK(refused.output.find("holds another run") != std::string::npos);
  CHECK(fs::file_size(dir + "/trace.jsonl") == trace.size() / 3);
  CommandResult r = run_umlos("run -q --resume '" + dir + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(read_text(dir + "/trace.jsonl") == trace);
  CHECK(read_text(dir + "/tape.bin") == tape);
}

TEST_CASE("trace.path in a manifest is refused with UNIMPLEMENTED naming the key", "[runfolder][manifest]") {
  const std::string root = temp_dir("trace-path");
  const std::string m =
      variant("demo_walk", "trace-path", {{"\nconfig:", "\ntrace: {path: '" + root + "/elsewhere.jsonl'}\nconfig:"}});
  CommandResult r = run_umlos("run -q --run-dir '" + root + "/run' '" + m + "'");
  INFO(r.output);
  CHECK(r.exit_status == umlos::exit_code_for(UMLOS_UNIMPLEMENTED));
  CHECK(r.output.find("trace.path") != std::string::npos);
  CHECK_FALSE(fs::exists(root + "/elsewhere.jsonl"));
  CHECK(names_in(root + "/run") == std::vector<std::string>{"failure.json"});
}

TEST_CASE("The shipped 600-step manifests with checkpoint_every 250 end with a checkpoint of step 600",
          "[runfolder][checkpoint][training][slow]") {
  for (const char* name : {"breast_cancer", "diabetes"}) {
    Run r = run(pinned_manifest(name), std::string("final-") + name);
    INFO(name << ": " << r.result.output);
    REQUIRE(r.result.exit_status == 0);
    CHECK(read_text(r.dir + "/checkpoints/latest") == "ckpt_00000600.pb\n");
    CHECK(fs::exists(r.dir + "/checkpoints/ckpt_00000600.pb"));
  }
}
