// distributed.tests.cpp — multi-rank jobs as real processes over Gloo
// (docs/distributed.md): `umlos run --nproc W` on 1..4 local ranks gives
// the single-process bits; a rank killed with SIGKILL stops the job within
// the timeout with a failure record naming it; a job whose ranks were all
// killed resumes (on the same or another world size) to the uninterrupted
// result; ranks with different manifests and malformed worlds are refused.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "../comm_support.hpp"
#include "../skip.hpp"
#include "error.hpp"
#include "run_support.hpp"
#include "test_support.hpp"

using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json last_record(const std::string& trace) { return records(trace).back(); }

// A shortened digits with a probe inside the run (clustering on every
// rank), and any further edits.
std::string short_digits(const std::string& tag, int steps,
                         std::vector<std::pair<std::string, std::string>> edits = {}) {
  edits.insert(edits.begin(), {{"max_steps: 1500", "max_steps: " + std::to_string(steps)},
                               {"cond: \"t mod 250 == 0\"", "cond: \"t mod 25 == 0\""}});
  return variant("digits", tag, edits);
}

size_t iter_count(const std::string& trace) {
  std::error_code ec;
  if (!fs::exists(trace, ec)) return 0;
  size_t n = 0;
  const std::string text = read_text(trace);
  for (size_t at = text.find("\"record\":\"iter\""); at != std::string::npos;
       at = text.find("\"record\":\"iter\"", at + 1))
    ++n;
  return n;
}

// The launcher's children: pid of each RANK (read from /proc/PID/environ).
std::map<int, pid_t> ranks_of(pid_t launcher) {
  std::map<int, pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid != launcher) continue;
    std::ifstream env(e.path() / "environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var.rfind("RANK=", 0) == 0) out[std::stoi(var.substr(5))] = static_cast<pid_t>(std::stol(name));
  }
  return out;
}

// Waits for `pid` up to `limit`; its exit status (128 + signal), or -1
// after killing it and `others` (a job that outlived its bound).
int wait_for(pid_t pid, std::chrono::seconds limit, const std::map<int, pid_t>& others = {}) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (const auto& [r, other] : others) ::kill(other, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Waits until `pid` has exited (gone, or a zombie nobody reaps): a process
// killed with SIGKILL still holds its files, the run folder's lock
// included, until the kernel has torn it down.
void wait_gone(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return;
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Waits until no process holds run folder `dir`'s lock (as a resume takes
// it), up to 60 s; whether it came free. A killed rank's leader thread can
// show as a zombie while its other threads still hold the open files, and
// with them the lock, for a moment longer (seen under the sanitizers).
bool wait_unlocked(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool free = false;
  while (!(free = ::flock(fd, LOCK_EX | LOCK_NB) == 0) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::close(fd);  // releases the lock taken, if any
  return free;
}

}  // namespace

namespace {

// A job of two ranks started by hand, as a cluster launcher would (RANK,
// WORLD_SIZE and a rendezvous in the environment: `meet`, or by default a
// fresh folder): rank 1 in the background (`args1`, manifest `m1`), rank 0
// in the foreground writing its run folder to ROOT/run (`args0`, `m0`).
// Waits for both and returns their exit statuses; their output is in
// ROOT/rank0.txt and ROOT/rank1.txt.
std::pair<int, int> two_ranks_by_hand(const std::string& root, const std::string& args0, const std::string& m0,
                                      const std::string& args1, const std::string& m1, std::string meet = "") {
  if (meet.empty()) meet = "UMLOS_RENDEZVOUS='file:" + temp_dir("dist-rv") + "'";
  const std::string env = "UML_OS_ROOT='" + root + "' WORLD_SIZE=2 " + meet + " ";
  const std::string cmd = env + "RANK=1 '" + UMLOS_EXE + "' run -q " + args1 + " '" + m1 + "' > '" + root +
                          "/rank1.txt' 2>&1 & " + env + "RANK=0 '" + UMLOS_EXE + "' run -q " + args0 + " --run-dir '" +
                          root + "/run' '" + m0 + "' > '" + root + "/rank0.txt' 2>&1; echo $? > '" + root +
                          "/status0'; wait $!; echo $? > '" + root + "/status1'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return {std::stoi(read_text(root + "/status0")), std::stoi(read_text(root + "/status1"))};
}

// Connects to 127.0.0.1:port (retrying for up to 30 s while rank 0 starts)
// and sends `bytes`, then closes: a stray client of the rendezvous.
bool send_stray(int port, const std::string& bytes) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const bool sent = ::send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
      ::close(s);
      return sent;
    }
    ::close(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST_CASE(
    "Digits as a job of 1, 2, 3 and 4 local ranks gives the single process's state_fp sequence, parameters and "
    "accuracy, hashing the state fingerprint on a thread of its own only where the ranks leave a core free",
    "[distributed][gloo]") {
  const std::string m = short_digits("ranks", 60);
  const Run one = run_ok(m, "ranks-1");
  const std::vector<std::string> expected = state_fps(one.trace());
  REQUIRE(expected.size() == 60);
  const json end1 = last_record(one.trace());
  CHECK(end1.at("world_size") == 1);
  for (int w : {1, 2, 3, 4}) {
    INFO("world size " << w);
    const Run many = run_ok(m, "ranks-" + std::to_string(w), "--profile --nproc " + std::to_string(w));
    CHECK(state_fps(many.trace()) == expected);
    // A job, even of one rank, goes through the driver's collectives: the
    // manifest check and one state_fp barrier per step at least.
    const json profile = json::parse(read_text(many.dir + "/profile.json"));
    CHECK(profile.at("collectives").at("calls").get<int64_t>() >= 61);
    // The state fingerprint gets a hashing thread only where the local
    // ranks leave a core free (same bits either way).
    CHECK(profile.at("state_fp_overlapped").get<bool>() == (w < usable_cores()));
    // A rank with no core to spare hashes two steps at a time instead.
    CHECK(profile.at("state_fp_paired").get<bool>() == !(w < usable_cores()));
    const std::vector<json> recs = records(many.trace());
    CHECK(recs.front().at("world_size") == w);
    const json end = recs.back();
    CHECK(end.at("world_size") == w);
    CHECK(end.at("state_fp") == end1.at("state_fp"));
    CHECK(end.at("functional_fp") == end1.at("functional_fp"));
    CHECK(end.at("val_accuracy") == end1.at("val_accuracy"));
    CHECK(end.at("tape_digest") == end1.at("tape_digest"));
    // theta_final: the final checkpoint (parameters, optimiser, RNG, data
    // cursor, latent ring) and the tape are the same bytes.
    std::string latest = read_text(one.dir + "/checkpoints/latest");
    REQUIRE(read_text(many.dir + "/checkpoints/latest") == latest);
    latest = latest.substr(0, latest.find('\n'));
    CHECK(read_text(many.dir + "/checkpoints/" + latest) == read_text(one.dir + "/checkpoints/" + latest));
    CHECK(read_text(many.dir + "/tape.bin") == read_text(one.dir + "/tape.bin"));
  }
}

TEST_CASE(
    "Digits at batch 1024, four 256-row chunks dealt whole to 2, 3 and 4 ranks, gives the single process's state_fp "
    "sequence and parameters",
    "[distributed][gloo]") {
  // With at least as many chunks as ranks, each rank takes the chunk
  // partials of every weight gradient from its own rows during backward
  // and only the partials travel (docs/distributed.md); 3 ranks hold
  // unequal shares (two chunks on rank 0).
  const std::string m = short_digits("chunks", 12, {{"  batch_size: 64", "  batch_size: 1024"}});
  const Run one = run_ok(m, "chunks-1");
  const std::vector<std::string> expected = state_fps(one.trace());
  REQUIRE(expected.size() == 12);
  std::string latest = read_text(one.dir + "/checkpoints/latest");
  latest = latest.substr(0, latest.find('\n'));
  for (int w : {2, 3, 4}) {
    INFO("world size " << w);
    const Run many = run_ok(m, "chunks-" + std::to_string(w), "--nproc " + std::to_string(w));
    CHECK(state_fps(many.trace()) == expected);
    CHECK(read_text(many.dir + "/checkpoints/" + latest) == read_text(one.dir + "/checkpoints/" + latest));
  }
}

TEST_CASE("The symbolic augment path (prototypes, equations) gives the single-process bits on 2 ranks",
          "[distributed][gloo][symbolic]") {
  const std::string m = variant("digits_augment", "ranks",
                                {{"t == 300 and state == S_P", "t == 40 and state == S_P"},
                                 {"\"t mod 100 == 0\"", "\"t mod 20 == 0\""},
                                 {"max_steps: 600", "max_steps: 70"}});
  const Run one = run_ok(m, "aug-1");
  const Run two = run_ok(m, "aug-2", "--nproc 2");
  const std::vector<std::string> a = state_fps(one.trace());
  REQUIRE(a.size() == 70);
  CHECK(state_fps(two.trace()) == a);
  CHECK(last_record(two.trace()).at("functional_fp") == last_record(one.trace()).at("functional_fp"));
  CHECK(read_text(two.trace()).find("S_PROTO") != std::string::npos);
}

TEST_CASE("A rank killed with SIGKILL stops the job within the timeout, with a failure record naming the rank",
          "[distributed][gloo][failure]") {
  const std::string m = short_digits("kill", 1500);
  const std::string root = temp_dir("dist-kill");
  const std::string dir = root + "/run";
  const pid_t launcher = spawn_umlos({"run", "-q", "--nproc", "3", "--comm-timeout", "20", "--run-dir", dir, m}, root);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (iter_count(dir + "/trace.jsonl") < 10 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(iter_count(dir + "/trace.jsonl") >= 10);
  const std::map<int, pid_t> ranks = ranks_of(launcher);
  REQUIRE(ranks.size() == 3);
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(ranks.at(1), SIGKILL) == 0);
  // Bound: the collective timeout (20 s) plus the launcher's grace (10 s).
  const int status = wait_for(launcher, std::chrono::seconds(40), ranks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  REQUIRE(status >= 0);
  WARN("the job stopped " << seconds << " s after rank 1 was killed");
  CHECK(status == umlos::exit_code_for(UMLOS_COLLECTIVE_FAILURE));
  // No rank is left behind.
  for (const auto& [r, pid] : ranks) CHECK((::kill(pid, 0) != 0 || r == 1));
  REQUIRE(fs::exists(dir + "/failure.json"));
  const json f = json::parse(read_text(dir + "/failure.json"));
  CHECK(f.at("failure_code") == "COLLECTIVE_FAILURE");
  const std::string msg = f.at("message").get<std::string>();
  INFO(msg);
  CHECK(msg.find("rank 1 died: killed by signal 9") != std::string::npos);
  const json end = last_record(dir + "/trace.jsonl");
  CHECK(end.at("record") == "run_end");
  CHECK(end.at("status") == "failed");
}

TEST_CASE("A rank that hangs stops the job within the collective timeout plus the launcher's grace, named as silent",
          "[distributed][gloo][failure]") {
  const std::string m = short_digits("hang", 1500);
  const std::string root = temp_dir("dist-hang");
  const std::string dir = root + "/run";
  const pid_t launcher = spawn_umlos({"run", "-q", "--nproc", "3", "--comm-timeout", "5", "--run-dir", dir, m}, root);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (iter_count(dir + "/trace.jsonl") < 10 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::map<int, pid_t> ranks = ranks_of(launcher);
  REQUIRE(ranks.size() == 3);
  const auto stopped_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(ranks.at(2), SIGSTOP) == 0);
  // 5 s timeout + up to 5 s for the other ranks' notes + 10 s grace.
  const int status = wait_for(launcher, std::chrono::seconds(45), ranks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  REQUIRE(status >= 0);
  WARN("the job stopped " << seconds << " s after rank 2 was stopped");
  CHECK(status == umlos::exit_code_for(UMLOS_COLLECTIVE_FAILURE));
  for (const auto& [r, pid] : ranks) CHECK(::kill(pid, 0) != 0);
  const json f = json::parse(read_text(dir + "/failure.json"));
  CHECK(f.at("failure_code") == "COLLECTIVE_FAILURE");
  const std::string msg = f.at("message").get<std::string>();
  INFO(msg);
  CHECK(msg.find("did not answer within the 5000 ms timeout") != std::string::npos);
  CHECK(msg.find("no word from rank 2 (hung, or unreachable)") != std::string::npos);
}

TEST_CASE("SIGINT to the launcher (Ctrl-C) stops every rank, and the run folder stays resumable",
          "[distributed][gloo][failure]") {
  const std::string m = short_digits("sigint", 200);
  const std::string root = temp_dir("dist-sigint");
  const std::string dir = root + "/run";
  const pid_t launcher =
      spawn_umlos({"run", "-q", "--nproc", "2", "--checkpoint-every", "5", "--run-dir", dir, m}, root);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (iter_count(dir + "/trace.jsonl") < 12 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::map<int, pid_t> ranks = ranks_of(launcher);
  REQUIRE(ranks.size() == 2);
  REQUIRE(::kill(launcher, SIGINT) == 0);
  const int status = wait_for(launcher, std::chrono::seconds(40), ranks);
  CHECK(status == 128 + SIGINT);
  for (const auto& [r, pid] : ranks) CHECK(::kill(pid, 0) != 0);
  // What was checkpointed continues: the run folder is whole.
  const CommandResult resumed = run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --nproc 2 --resume '" + dir + "'");
  INFO(resumed.output);
  CHECK(resumed.exit_status == 0);
}

TEST_CASE("A job whose ranks were all killed resumes, on the same or another world size, to the uninterrupted run",
          "[distributed][gloo][checkpoint]") {
  const std::string m = short_digits("resume", 90);
  const Run whole = run_ok(m, "resume-whole", "--checkpoint-every 20");
  const std::vector<std::string> expected = state_fps(whole.trace());
  for (const char* again : {"2", "3"}) {
    INFO("resumed on " << again << " ranks");
    const std::string root = temp_dir(std::string("dist-resume-") + again);
    const std::string dir = root + "/run";
    const pid_t launcher =
        spawn_umlos({"run", "-q", "--nproc", "2", "--checkpoint-every", "20", "--run-dir", dir, m}, root);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (iter_count(dir + "/trace.jsonl") < 45 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::map<int, pid_t> ranks = ranks_of(launcher);
    REQUIRE(ranks.size() == 2);
    ::kill(launcher, SIGKILL);
    for (const auto& [r, pid] : ranks) ::kill(pid, SIGKILL);
    ::waitpid(launcher, nullptr, 0);
    for (const auto& [r, pid] : ranks) wait_gone(pid);
    REQUIRE(wait_unlocked(dir));
    REQUIRE(iter_count(dir + "/trace.jsonl") >= 40);
    const CommandResult resumed =
        run_umlos_env("UML_OS_ROOT='" + root + "'", std::string("run -q --nproc ") + again + " --resume '" + dir + "'");
    INFO(resumed.output);
    REQUIRE(resumed.exit_status == 0);
    CHECK(state_fps(dir + "/trace.jsonl") == expected);
    CHECK(last_record(dir + "/trace.jsonl").at("state_fp") == last_record(whole.trace()).at("state_fp"));
  }
}

TEST_CASE(
    "Ranks that hash their state fingerprints differently, one two steps at a time and one on a thread of its own, "
    "run the job to the single process's state_fp sequence",
    "[distributed][gloo][fingerprint]") {
  // As on machines of different core counts: a rank with no core to spare
  // hashes in pairs, one with cores to spare on a thread. Both settle a
  // step's rank barrier between the next step's operators and the one
  // after, so their collectives still pair up.
  const std::string m = short_digits("mixed-hashing", 41);
  const Run one = run_ok(m, "mixed-hashing-1");
  const std::string root = temp_dir("dist-mixed-hashing");
  // Rank 1 is started without LOCAL_WORLD_SIZE: the only rank on its
  // machine as far as it knows, so it hashes on a thread of its own (its
  // private folder, profile included, is removed when it succeeds).
  const auto [status0, status1] =
      two_ranks_by_hand(root, "--profile --paired-fingerprints --comm-timeout 60", m, "", m);
  INFO(read_text(root + "/rank0.txt") << read_text(root + "/rank1.txt"));
  CHECK(status0 == 0);
  CHECK(status1 == 0);
  CHECK(json::parse(read_text(root + "/run/profile.json")).at("state_fp_paired").get<bool>());
  CHECK(state_fps(root + "/run/trace.jsonl") == state_fps(one.trace()));
}

TEST_CASE("Ranks started with different manifests stop with RANK_DIVERGENCE naming both manifest hashes",
          "[distributed][gloo][failure]") {
  const std::string a = short_digits("diverge-a", 30);
  const std::string b = variant("digits", "diverge-b", {{"max_steps: 1500", "max_steps: 31"}});
  const std::string root = temp_dir("dist-diverge");
  const auto [status0, status1] = two_ranks_by_hand(root, "", a, "", b);
  const std::string out1 = read_text(root + "/rank1.txt");
  INFO(out1);
  CHECK(status1 == umlos::exit_code_for(UMLOS_RANK_DIVERGENCE));
  CHECK(out1.find("RANK_DIVERGENCE") != std::string::npos);
  CHECK(out1.find("but rank 0's manifest_hash is") != std::string::npos);
  // Rank 0 loses its peer and names it.
  CHECK(status0 == umlos::exit_code_for(UMLOS_COLLECTIVE_FAILURE));
  const json f = json::parse(read_text(root + "/run/failure.json"));
  CHECK(f.at("message").get<std::string>().find("rank 1 failed RANK_DIVERGENCE") != std::string::npos);
}

TEST_CASE("A FIFO planted as a rank's note in the rendezvous folder neither blocks nor misleads the failure record",
          "[distributed][gloo][failure][security]") {
  const std::string m = short_digits("fifo", 1500);
  const std::string root = temp_dir("dist-fifo");
  const std::string rendezvous = temp_dir("dist-fifo-rv");
  REQUIRE(::mkfifo((rendezvous + "/umlos.failed.1").c_str(), 0600) == 0);
  const pid_t r0 = ::fork();
  REQUIRE(r0 >= 0);
  if (r0 == 0) {
    ::setenv("UML_OS_ROOT", root.c_str(), 1);
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "2", 1);
    ::setenv("UMLOS_RENDEZVOUS", ("file:" + rendezvous).c_str(), 1);
    ::execl(UMLOS_EXE, UMLOS_EXE, "run", "-q", "--comm-timeout", "10", "--run-dir", (root + "/run").c_str(), m.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const pid_t r1 = ::fork();
  REQUIRE(r1 >= 0);
  if (r1 == 0) {
    ::setenv("UML_OS_ROOT", root.c_str(), 1);
    ::setenv("RANK", "1", 1);
    ::setenv("WORLD_SIZE", "2", 1);
    ::setenv("UMLOS_RENDEZVOUS", ("file:" + rendezvous).c_str(), 1);
    ::execl(UMLOS_EXE, UMLOS_EXE, "run", "-q", "--comm-timeout", "10", m.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string trace = root + "/run/trace.jsonl";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (iter_count(trace) < 5 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(::kill(r1, SIGKILL) == 0);
  ::waitpid(r1, nullptr, 0);
  const int status = wait_for(r0, std::chrono::seconds(30));
  REQUIRE(status == umlos::exit_code_for(UMLOS_COLLECTIVE_FAILURE));
  const std::string msg = json::parse(read_text(root + "/run/failure.json")).at("message").get<std::string>();
  INFO(msg);
  CHECK(msg.find("no word from rank 1 (hung, or unreachable)") != std::string::npos);
}

namespace {

// The SHA-256 `umlos hash FILE` prints first.
std::string digest_of(const std::string& file) {
  const CommandResult r = run_umlos_env("", "hash '" + file + "'");
  REQUIRE(r.exit_status == 0);
  return r.output.substr(0, 64);
}

// GPUs nvidia-smi lists here (0 without an NVIDIA driver).
int gpu_count() {
  FILE* p = ::popen("nvidia-smi -L 2>/dev/null | grep -c '^GPU'", "r");
  if (!p) return 0;
  int n = 0;
  if (std::fscanf(p, "%d", &n) != 1) n = 0;
  ::pclose(p);
  return n;
}

std::string cuda_module() { return std::string(UMLOS_MODULE_DIR) + "/libumlos_cuda_driver.so"; }

// short_digits with its driver swapped to cuda_driver as a user would: the
// driver's name, its module line and that module's pin.
std::string cuda_digits(const std::string& tag, int steps) {
  const std::string cpu = std::string(UMLOS_MODULE_DIR) + "/libumlos_cpu_driver.so";
  return short_digits(tag, steps,
                      {{"libumlos_cpu_driver.so", "libumlos_cuda_driver.so"},
                       {digest_of(cpu), digest_of(cuda_module())},
                       {"name: cpu_driver", "name: cuda_driver"}});
}

}  // namespace

TEST_CASE("Digits on 2 ranks of cuda_driver over NCCL, one GPU each, gives the bits of one cuda_driver process",
          "[distributed][nccl][gpu]") {
  if (!fs::exists(cuda_module())) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  if (const int n = gpu_count(); n < 2) {
    UMLOS_SKIP("needs 2 GPUs (NCCL refuses two ranks on one GPU); nvidia-smi lists " << n);
  }
  const std::string m = cuda_digits("nccl", 40);
  const Run one = run_ok(m, "nccl-1");
  const Run two = run_ok(m, "nccl-2", "--nproc 2");  // LOCAL_RANK picks each rank's GPU
  const std::vector<std::string> expected = state_fps(one.trace());
  REQUIRE(expected.size() == 40);
  CHECK(state_fps(two.trace()) == expected);
}

// How far a GPU run may drift from the CPU run of the same manifest:
// cuda_driver's transcendental primitives follow CUDA's libm, within 1e-5
// relative of glibc's in f32 (docs/cuda_driver.md), and training carries
// those last-bit differences on from step to step. Over the 40 steps
// below, each step's loss_total stays within 1e-4 relative (absolute under
// 1) of the CPU's, the held-out accuracy within 2 points. Measured on an
// H100: 6.1e-8 at worst, the same accuracy (docs/distributed.md).
constexpr double kGpuLossTolerance = 1e-4;
constexpr double kGpuAccuracyTolerance = 0.02;

TEST_CASE("Digits as a one-rank job of cuda_driver over NCCL follows the one-rank Gloo job within the tolerance",
          "[distributed][nccl][gpu]") {
  if (!fs::exists(cuda_module())) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  if (gpu_count() < 1) {
    UMLOS_SKIP("no GPU: nvidia-smi lists none");
  }
  const std::string on_cpu = short_digits("nccl-w1-cpu", 40);
  const std::string on_gpu = cuda_digits("nccl-w1-gpu", 40);
  const Run gpu_job = run(on_gpu, "nccl-w1-job", "--profile --nproc 1");
  if (gpu_job.result.exit_status == umlos::exit_code_for(UMLOS_UNAVAILABLE)) {
    UMLOS_SKIP("cuda_driver or NCCL unavailable: " << gpu_job.result.output);
  }
  INFO(gpu_job.result.output);
  REQUIRE(gpu_job.result.exit_status == 0);
  const Run gpu_plain = run_ok(on_gpu, "nccl-w1-plain");
  const Run cpu_job = run_ok(on_cpu, "nccl-w1-gloo", "--profile --nproc 1");

  // The job's collectives ran (over NCCL) and changed no bit of the GPU run.
  const json profile = json::parse(read_text(gpu_job.dir + "/profile.json"));
  CHECK(profile.at("collectives").at("calls").get<int64_t>() >= 41);
  CHECK(state_fps(gpu_job.trace()) == state_fps(gpu_plain.trace()));

  // Against the Gloo job on cpu_driver: the same draws, losses and accuracy
  // within the tolerance.
  std::vector<json> g, c;
  for (const json& r : records(gpu_job.trace()))
    if (r.value("record", "") == "iter") g.push_back(r);
  for (const json& r : records(cpu_job.trace()))
    if (r.value("record", "") == "iter") c.push_back(r);
  REQUIRE(g.size() == 40);
  REQUIRE(c.size() == 40);
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double lg = g[i].at("loss_total").get<double>(), lc = c[i].at("loss_total").get<double>();
    const double rel = std::fabs(lg - lc) / std::max(1.0, std::fabs(lc));
    worst = std::max(worst, rel);
    INFO("t=" << i + 1 << " loss_total GPU " << lg << " CPU " << lc);
    CHECK(rel <= kGpuLossTolerance);
  }
  const json ge = last_record(gpu_job.trace()), ce = last_record(cpu_job.trace());
  CHECK(ge.at("rng_fingerprint") == ce.at("rng_fingerprint"));
  const double acc_gpu = ge.at("val_accuracy").get<double>(), acc_cpu = ce.at("val_accuracy").get<double>();
  CHECK(std::fabs(acc_gpu - acc_cpu) <= kGpuAccuracyTolerance);
  std::printf(
      "NCCL one-rank job vs Gloo one-rank job, 40 steps: largest relative loss_total difference %.3g; "
      "val_accuracy GPU %.5f, CPU %.5f; NCCL collectives %lld\n",
      worst, acc_gpu, acc_cpu, static_cast<long long>(profile.at("collectives").at("calls").get<int64_t>()));
}

TEST_CASE("Malformed worlds and manifests that set the world are refused with their key named", "[distributed][cli]") {
  const std::string m = short_digits("badworld", 5);
  const CommandResult no_rv = run_umlos_env("WORLD_SIZE=2 RANK=0", "run -q '" + m + "'");
  CHECK(no_rv.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(no_rv.output.find("needs a rendezvous") != std::string::npos);
  const CommandResult bad_rank = run_umlos_env("WORLD_SIZE=2 RANK=2", "run -q '" + m + "'");
  CHECK(bad_rank.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(bad_rank.output.find("rank 2 of world size 2") != std::string::npos);
  const CommandResult junk = run_umlos_env("WORLD_SIZE=two", "run -q '" + m + "'");
  CHECK(junk.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(junk.output.find("WORLD_SIZE is 'two'") != std::string::npos);
  const CommandResult junk_local = run_umlos_env("LOCAL_WORLD_SIZE=many", "run -q '" + m + "'");
  CHECK(junk_local.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(junk_local.output.find("LOCAL_WORLD_SIZE is 'many'") != std::string::npos);
  const CommandResult local_over = run_umlos_env("LOCAL_WORLD_SIZE=3", "run -q '" + m + "'");
  CHECK(local_over.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(local_over.output.find("LOCAL_WORLD_SIZE 3 of world size 1") != std::string::npos);
  const CommandResult nproc_rank = run_umlos_env("", "run -q --nproc 2 --rank 1 '" + m + "'");
  CHECK(nproc_rank.exit_status == 2);
  const std::string pinned =
      variant("digits", "world-in-config", {{"  batch_size: 64", "  world_size: 2\n  batch_size: 64"}});
  const Run refused = run(pinned, "world-in-config");
  CHECK(refused.result.exit_status == umlos::exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK(refused.result.output.find("config.world_size") != std::string::npos);
}

TEST_CASE(
    "Ranks started with MASTER_ADDR and MASTER_PORT, as torchrun starts them, meet at rank 0's TCP rendezvous past "
    "stray clients and give the single process's state_fp sequence",
    "[distributed][gloo][rendezvous]") {
  const std::string m = short_digits("tcp", 30);
  const Run one = run_ok(m, "tcp-1");
  REQUIRE(state_fps(one.trace()).size() == 30);
  const std::string root = temp_dir("dist-tcp");
  const int port = free_port();
  // Strays at rank 0's port while the ranks meet: garbage, a request with
  // an oversized key, a value claimed 4 GiB long. Each is refused and
  // closed; the ranks' own requests are answered.
  std::vector<std::string> strays = {std::string("hello, rendezvous\n"), std::string("G\xff\xff\xff\xff", 5),
                                     std::string("S\x00\x00\x00\x01k\xff\xff\xff\xff", 10)};
  std::vector<bool> sent(strays.size(), false);
  std::thread stray([&] {
    for (size_t k = 0; k < strays.size(); ++k) sent[k] = send_stray(port, strays[k]);
  });
  // As torchrun starts them: no folder shared, rank 0's address and port.
  const std::string tcp = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port);
  const auto [status0, status1] = two_ranks_by_hand(root, "--comm-timeout 60", m, "--comm-timeout 60", m, tcp);
  stray.join();
  INFO(read_text(root + "/rank0.txt") << read_text(root + "/rank1.txt"));
  CHECK(status0 == 0);
  CHECK(status1 == 0);
  CHECK(sent == std::vector<bool>(strays.size(), true));
  CHECK(state_fps(root + "/run/trace.jsonl") == state_fps(one.trace()));
  CHECK(last_record(root + "/run/trace.jsonl").at("world_size") == 2);
}

TEST_CASE(
    "A rank whose TCP rendezvous has no rank 0 stops within the timeout naming the address, half a "
    "MASTER_ADDR/MASTER_PORT pair is refused, and without WORLD_SIZE they start no job",
    "[distributed][gloo][rendezvous][cli]") {
  const std::string m = short_digits("tcp-alone", 5);
  const int port = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult alone =
      run_umlos_env("WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port),
                    "run -q --comm-timeout 2 '" + m + "'");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  CHECK(alone.exit_status == umlos::exit_code_for(UMLOS_COLLECTIVE_FAILURE));
  CHECK(alone.output.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  // Exported for another tool, without WORLD_SIZE: a plain run, no job
  // (nothing listens, no collective runs).
  const std::string plain = temp_dir("dist-tcp-plain");
  const CommandResult solo =
      run_umlos_env("UML_OS_ROOT='" + plain + "' MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port),
                    "run -q --profile --run-dir '" + plain + "/run' '" + m + "'");
  CHECK(solo.exit_status == 0);
  const json solo_profile = json::parse(read_text(plain + "/run/profile.json"));
  CHECK(solo_profile.at("collectives").value("calls", int64_t(0)) == 0);
  const CommandResult half = run_umlos_env("WORLD_SIZE=2 RANK=0 MASTER_PORT=29500", "run -q '" + m + "'");
  CHECK(half.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(half.output.find("MASTER_ADDR is not") != std::string::npos);
  const CommandResult bad_port =
      run_umlos_env("WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=70000", "run -q '" + m + "'");
  CHECK(bad_port.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(bad_port.output.find("MASTER_PORT is '70000'") != std::string::npos);
  const CommandResult bad_url =
      run_umlos_env("WORLD_SIZE=2 RANK=0", "run -q --comm-timeout 2 --rendezvous tcp://127.0.0.1 '" + m + "'");
  CHECK(bad_url.exit_status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(bad_url.output.find("tcp://HOST:PORT") != std::string::npos);
}
