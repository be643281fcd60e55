// isolated.cpp — see isolated.hpp.
#include "isolated.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>

#include "error.hpp"

namespace umlos {

namespace {

[[noreturn]] void child(int fd, const std::function<nlohmann::json()>& body) {
  std::string s;
  try {
    s = body().dump();
  } catch (const std::exception& e) {
    s = nlohmann::json{{"ok", false}, {"error", std::string("INTERNAL: ") + e.what()}}.dump();
  }
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  ::_exit(0);
}

// Reads the child's report until EOF or the deadline; false when the
// deadline passed first.
bool read_report(int fd, double timeout_s, std::string& buf) {
  char chunk[4096];
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return true;
    if (ready == 0) continue;
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

IsolatedResult run_isolated(double timeout_s, const std::function<nlohmann::json()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) throw Failure(UMLOS_INTERNAL, "pipe() failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Failure(UMLOS_INTERNAL, "fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], body);
  }
  ::close(fds[1]);
  std::string buf;
  IsolatedResult r;
  r.timed_out = !read_report(fds[0], timeout_s, buf);
  ::close(fds[0]);
  if (r.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.timed_out) return r;
  if (WIFSIGNALED(status)) {
    r.how_it_died = "the module killed the process with signal " + std::to_string(WTERMSIG(status)) +
                    " (abort/crash escaped the boundary)";
    return r;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || buf.empty()) {
    r.how_it_died = "the module ended the process (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return r;
  }
  r.value = nlohmann::json::parse(buf, nullptr, false);
  if (r.value.is_discarded()) {
    r.how_it_died = "the case's report was not valid JSON (the module wrote to the report pipe?)";
    return r;
  }
  r.finished = true;
  return r;
}

}  // namespace umlos
