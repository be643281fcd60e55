// launch.cpp — world resolution and the local launcher (launch.hpp).
#include "launch.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "error.hpp"

extern char** environ;

namespace umlos {

namespace fs = std::filesystem;

namespace {

// A whole decimal number in [lo, hi], or INVALID_ARGUMENT naming `what`.
int64_t parse_int(const std::string& text, const std::string& what, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < lo || v > hi) {
    throw Failure(UMLOS_INVALID_ARGUMENT, what + " is '" + text + "', expected a whole number in " +
                                              std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

// torchrun's and Slurm scripts' rendezvous, MASTER_ADDR and MASTER_PORT, as
// tcp://HOST:PORT (an IPv6 address bracketed); "" when neither is set.
std::string master_rendezvous() {
  const std::string addr = env_or("MASTER_ADDR"), port = env_or("MASTER_PORT");
  if (addr.empty() && port.empty()) return "";
  if (addr.empty() || port.empty())
    throw Failure(UMLOS_INVALID_ARGUMENT, std::string(addr.empty() ? "MASTER_PORT" : "MASTER_ADDR") + " is set but " +
                                              (addr.empty() ? "MASTER_ADDR" : "MASTER_PORT") +
                                              " is not: a TCP rendezvous needs both (rank 0's address and a port)");
  parse_int(port, "MASTER_PORT", 1, 65535);
  const bool v6 = addr.find(':') != std::string::npos && addr.front() != '[';
  return "tcp://" + (v6 ? "[" + addr + "]" : addr) + ":" + port;
}

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + (strsignal(sig) ? strsignal(sig) : "?") + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

pid_t start_rank(int rank, int nproc, const std::string& rendezvous, const std::vector<std::string>& run_args) {
  std::vector<std::string> args = {"umlos", "run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "UMLOS_RENDEZVOUS" || key == "UMLOS_RENDEZVOUS_PREFIX" || key == "UMLOS_LISTEN_HOST")
      continue;
    env.push_back(kv);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(nproc));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc));
  env.push_back("UMLOS_RENDEZVOUS=" + rendezvous);
  env.push_back("UMLOS_RENDEZVOUS_PREFIX=job");
  env.push_back("UMLOS_LISTEN_HOST=127.0.0.1");
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0)
    throw Failure(UMLOS_RESOURCE_EXHAUSTED,
                  std::string("fork for rank ") + std::to_string(rank) + ": " + std::strerror(errno));
  if (pid == 0) {
    execve("/proc/self/exe", argv.data(), envp.data());
    std::fprintf(stderr, "umlos: rank %d: exec /proc/self/exe: %s\n", rank, std::strerror(errno));
    _exit(127);
  }
  return pid;
}

}  // namespace

WorldOptions resolve_world(int32_t rank, int32_t size, const std::string& rendezvous, int64_t timeout_ms) {
  WorldOptions w;
  const std::string env_rank = env_or("RANK"), env_size = env_or("WORLD_SIZE");
  w.size =
      size >= 1 ? size : (env_size.empty() ? 1 : static_cast<int32_t>(parse_int(env_size, "WORLD_SIZE", 1, 65536)));
  w.rank = rank >= 0 ? rank : (env_rank.empty() ? 0 : static_cast<int32_t>(parse_int(env_rank, "RANK", 0, 65535)));
  if (w.rank >= w.size) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "rank " + std::to_string(w.rank) + " of world size " +
                                              std::to_string(w.size) + ": expected 0 <= rank < world size");
  }
  const std::string env_local = env_or("LOCAL_WORLD_SIZE");
  w.local_size = env_local.empty() ? 1 : static_cast<int32_t>(parse_int(env_local, "LOCAL_WORLD_SIZE", 1, 65536));
  if (w.local_size > w.size) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "LOCAL_WORLD_SIZE " + std::to_string(w.local_size) + " of world size " +
                                              std::to_string(w.size) +
                                              ": expected at most the world size (ranks on this machine)");
  }
  w.rendezvous = rendezvous.empty() ? env_or("UMLOS_RENDEZVOUS") : rendezvous;
  // MASTER_ADDR/MASTER_PORT only for a process told its world (as
  // torchrun reads them): a shell that exports them for another tool must
  // not turn a plain run into a job listening on that port.
  if (w.rendezvous.empty() && (size >= 1 || !env_size.empty())) w.rendezvous = master_rendezvous();
  w.prefix = env_or("UMLOS_RENDEZVOUS_PREFIX", "umlos");
  w.listen_host = env_or("UMLOS_LISTEN_HOST");
  w.timeout_ms = timeout_ms;
  if (w.joins()) {
    if (w.rendezvous.empty()) {
      throw Failure(UMLOS_INVALID_ARGUMENT,
                    "world size " + std::to_string(w.size) +
                        " needs a rendezvous: MASTER_ADDR and MASTER_PORT (rank 0's address and a port free there), "
                        "--rendezvous tcp://HOST:PORT or file:/DIR, or UMLOS_RENDEZVOUS=file:/DIR, a folder every "
                        "rank reaches, fresh for the job (or start the ranks with umlos run --nproc N)");
    }
    // tcp://HOST:PORT is checked whole by the driver that joins the job.
    if (w.rendezvous.rfind("tcp://", 0) == 0) return w;
    if (w.rendezvous.rfind("file:/", 0) != 0) {
      throw Failure(UMLOS_INVALID_ARGUMENT, "rendezvous '" + w.rendezvous +
                                                "': expected file:/DIR (an absolute folder path) or tcp://HOST:PORT");
    }
    const std::string dir = w.rendezvous.substr(5);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw Failure(UMLOS_NOT_FOUND, "rendezvous folder '" + dir + "' does not exist or is not a folder");
    }
  }
  return w;
}

std::string private_rank_folder(int32_t rank) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / ("umlos-rank" + std::to_string(rank) + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) {
    throw Failure(UMLOS_IO_ERROR, "could not create a private folder for rank " + std::to_string(rank) + " in " +
                                      base.string() + ": " + std::strerror(errno));
  }
  return pattern;
}

int launch_local(int nproc, const std::vector<std::string>& run_args, int64_t grace_ms) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string dir = (base / "umlos-job-XXXXXX").string();
  if (!mkdtemp(dir.data()))
    throw Failure(UMLOS_IO_ERROR,
                  "could not create the rendezvous folder in " + base.string() + ": " + std::strerror(errno));
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } remove_dir{dir};
  WorldOptions notes;
  notes.size = nproc;
  notes.rendezvous = "file:" + dir;
  notes.prefix = "job";

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::vector<pid_t> pids(static_cast<size_t>(nproc), -1);
  std::vector<bool> running(static_cast<size_t>(nproc), false);
  for (int r = 0; r < nproc; ++r) {
    pids[r] = start_rank(r, nproc, notes.rendezvous, run_args);
    running[r] = true;
  }
  using clock = std::chrono::steady_clock;
  int job_status = 0;
  bool failed = false;
  clock::time_point stop_at{}, kill_at{};
  bool terminated = false, killed = false;
  int left = nproc;
  while (left > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      int rank = -1;
      for (int r = 0; r < nproc; ++r)
        if (pids[r] == pid) rank = r;
      if (rank < 0) continue;
      running[rank] = false;
      --left;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        // A rank that died without a word (a signal) gets its note here, so
        // the ranks that lose it can name it.
        if (WIFSIGNALED(status) && !(terminated && WTERMSIG(status) == SIGTERM)) {
          note_rank_failure(notes, rank, "rank " + std::to_string(rank) + " died: " + describe_status(status));
        }
        std::fprintf(stderr, "umlos: rank %d (pid %d) %s\n", rank, static_cast<int>(pid),
                     describe_status(status).c_str());
        if (!failed) {
          failed = true;
          job_status = WIFEXITED(status) ? WEXITSTATUS(status) : exit_code_for(UMLOS_COLLECTIVE_FAILURE);
          stop_at = clock::now() + std::chrono::milliseconds(grace_ms);
        }
      }
      continue;
    }
    if (g_stop_signal && !failed) {
      failed = true;
      job_status = 128 + g_stop_signal;
      stop_at = clock::now();
      std::fprintf(stderr, "umlos: signal %d: stopping every rank\n", static_cast<int>(g_stop_signal));
    }
    const clock::time_point now = clock::now();
    if (failed && !terminated && now >= stop_at) {
      // SIGCONT first: a stopped rank must run to take its SIGTERM (and
      // leave its failure record).
      for (int r = 0; r < nproc; ++r)
        if (running[r]) {
          kill(pids[r], SIGTERM);
          kill(pids[r], SIGCONT);
        }
      terminated = true;
      kill_at = now + std::chrono::seconds(10);
    }
    if (terminated && !killed && now >= kill_at) {
      for (int r = 0; r < nproc; ++r)
        if (running[r]) kill(pids[r], SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (failed) std::fprintf(stderr, "umlos: the job of %d ranks stopped (exit status %d)\n", nproc, job_status);
  return job_status;
}

}  // namespace umlos
