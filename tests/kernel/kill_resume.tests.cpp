// kill_resume.tests.cpp — `umlos run` of digits killed with SIGKILL at
// random moments (some of them inside a checkpoint write), each time
// continued with `umlos run --resume RUN_DIR`: the trace, the tape and the
// final state_fp equal those of the uninterrupted run every time.
//
// By default a shortened digits (300 steps, checkpoints every 40, so the
// last step is not a checkpoint step) and 5 kills at moments drawn from a
// fixed seed. UMLOS_KILL_MOMENTS=N draws N moments, UMLOS_KILL_SEED=S
// another seed, UMLOS_KILL_FULL=1 runs build/manifests/digits.yaml as it
// ships (1500 steps, checkpoints every 250). Each kill prints one line.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "run_support.hpp"
#include "test_support.hpp"

using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::strtol(v, nullptr, 10) : fallback;
}

size_t iter_records(const std::string& trace) {
  std::error_code ec;
  if (!fs::exists(trace, ec)) return 0;
  const std::string text = read_text(trace);
  size_t n = 0;
  for (size_t at = text.find("\"record\":\"iter\""); at != std::string::npos;
       at = text.find("\"record\":\"iter\"", at + 1))
    ++n;
  return n;
}

// Temporary files of atomic writes in the run folder and its checkpoints.
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& sub : {std::string(), std::string("/checkpoints")}) {
    for (const auto& e : fs::directory_iterator(dir + sub, ec)) {
      const std::string n = e.path().filename().string();
      if (n.find(".tmp.") != std::string::npos) out.push_back(sub.empty() ? n : sub.substr(1) + "/" + n);
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "A digits run killed with SIGKILL at random moments, checkpoint writes included, resumes to the "
    "uninterrupted run's trace and state_fp every time",
    "[training][checkpoint][kill][slow]") {
  const bool full = env_long("UMLOS_KILL_FULL", 0) != 0;
  const long moments = env_long("UMLOS_KILL_MOMENTS", 5);
  const unsigned long seed = static_cast<unsigned long>(env_long("UMLOS_KILL_SEED", 20261125));
  const int64_t steps = full ? 1500 : 300, every = full ? 250 : 40;
  const std::string m =
      full ? pinned_manifest("digits")
           : variant("digits", "killres",
                     {{"max_steps: 1500", "max_steps: 300"}, {"checkpoint_every: 250", "checkpoint_every: 40"}});

  const auto t0 = std::chrono::steady_clock::now();
  Run whole = run(m, "killres-whole");
  const double whole_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(whole.result.output);
  REQUIRE(whole.result.exit_status == 0);
  const std::string trace = read_text(whole.trace());
  const std::string tape = read_text(whole.dir + "/tape.bin");
  const std::vector<json> recs = records(whole.trace());
  const std::string final_fp = recs.back()["state_fp"];
  REQUIRE(recs.back()["t"] == steps);
  std::printf("kill-resume: %s, %lld steps, checkpoint_every %lld, uninterrupted run %.1f s, final state_fp %s\n",
              m.c_str(), static_cast<long long>(steps), static_cast<long long>(every), whole_s, final_fp.c_str());

  std::mt19937_64 rng(seed);
  int equal = 0, in_checkpoint_write = 0;
  for (long k = 0; k < moments; ++k) {
    const std::string root = temp_dir("killres-" + std::to_string(k));
    const std::string dir = root + "/run";
    // Every fourth kill waits for a checkpoint's temporary file and kills
    // while it is being written; the others at a uniform moment of the run.
    const bool target_write = k % 4 == 3;
    const int64_t ck_t = every * static_cast<int64_t>(1 + rng() % static_cast<uint64_t>(steps / every));
    const double moment = std::uniform_real_distribution<double>(0.0, whole_s)(rng);
    const pid_t pid = spawn_umlos({"run", "-q", "--run-dir", dir, m}, root);
    const auto start = std::chrono::steady_clock::now();
    bool exited = false;
    if (target_write) {
      char name[64];
      std::snprintf(name, sizeof name, "/checkpoints/ckpt_%08lld.pb.tmp.%d", static_cast<long long>(ck_t), pid);
      struct stat st {};
      while (::stat((dir + name).c_str(), &st) != 0) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
        ::usleep(50);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(moment));
    }
    const double at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!exited) {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    const size_t iters = iter_records(dir + "/trace.jsonl");
    const std::vector<std::string> left = temporaries(dir);
    if (!left.empty()) ++in_checkpoint_write;
    std::string latest = "-";
    if (fs::exists(dir + "/checkpoints/latest")) latest = read_text(dir + "/checkpoints/latest"), latest.pop_back();

    // Continue it: `umlos run --resume RUN_DIR` once the folder names its
    // manifest; a kill before that (within the first milliseconds) leaves
    // an empty folder, which the same `umlos run` simply takes again.
    CommandResult r;
    std::string how;
    if (fs::exists(dir + "/manifest.path")) {
      how = "resume";
      r = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --resume '" + dir + "'");
    } else {
      how = "fresh";
      CHECK((!fs::exists(dir) || fs::is_empty(dir)));
      r = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --run-dir '" + dir + "' '" + m + "'");
    }
    INFO("kill " << k << " at " << at_s << " s, " << iters << " iterations: " << r.output);
    CHECK(r.exit_status == 0);
    const bool same = r.exit_status == 0 && read_text(dir + "/trace.jsonl") == trace &&
                      read_text(dir + "/tape.bin") == tape &&
                      records(dir + "/trace.jsonl").back()["state_fp"] == final_fp && temporaries(dir).empty();
    CHECK(same);
    if (same) ++equal;
    std::printf("kill-resume: kill %ld at %.3f s (%s), %zu iter records, latest %s, temporaries left %zu%s, %s: %s\n",
                k + 1, at_s, target_write ? ("in the write of ckpt " + std::to_string(ck_t)).c_str() : "random", iters,
                latest.c_str(), left.size(), left.empty() ? "" : (" (" + left[0] + ")").c_str(), how.c_str(),
                same ? "trace, tape, state_fp equal" : "DIFFERENT");
  }
  std::printf(
      "kill-resume: %d of %ld kills resumed to the uninterrupted run (%d left a checkpoint write's temporary "
      "file behind)\n",
      equal, moments, in_checkpoint_write);
  std::fflush(stdout);
}
