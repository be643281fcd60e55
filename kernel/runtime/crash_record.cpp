// crash_record.cpp — see crash_record.hpp. Everything the handler touches is
// static storage written before the crash; it formats with its own
// appenders (no printf, no allocation).
#include "crash_record.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace umlos::crash {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr size_t kNameMax = 256;

int g_dir_fd = -1;
char g_token[80] = "";
char g_op[kNameMax] = "UML_OS.OS.Bootstrap_v1";
std::atomic<int64_t> g_t{0};
std::atomic<bool> g_in_module{false};
struct sigaction g_previous[sizeof kSignals / sizeof kSignals[0]];
alignas(16) char g_alt_stack[1 << 16];
bool g_armed = false;

// Appends to a fixed buffer, truncating; never allocates.
struct Out {
  char buf[2048];
  size_t n = 0;
  void text(const char* s) {
    while (*s && n + 1 < sizeof buf) buf[n++] = *s++;
  }
  // A JSON string body: quotes, backslashes and control bytes escaped.
  void json_text(const char* s) {
    for (; *s; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        text("\\");
        char one[2] = {static_cast<char>(c), 0};
        text(one);
      } else if (c < 0x20) {
        text("?");
      } else {
        char one[2] = {static_cast<char>(c), 0};
        text(one);
      }
    }
  }
  void integer(int64_t v) {
    char digits[24];
    int k = 0;
    const bool neg = v < 0;
    uint64_t u = neg ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
    do {
      digits[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u && k < 23);
    if (neg) text("-");
    while (k > 0) {
      char one[2] = {digits[--k], 0};
      text(one);
    }
  }
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
  }
  return "a signal";
}

void format_record(Out& o, int sig) {
  const bool in_module = g_in_module.load();
  const int64_t t = g_t.load();
  o.text("{\n  \"record\": \"failure\",\n  \"t\": ");
  o.integer(t);
  o.text(",\n  \"failure_code\": \"");
  o.text(in_module ? "CONTRACT_VIOLATION" : "INTERNAL");
  o.text("\",\n  \"failure_operator\": \"");
  o.json_text(g_op);
  o.text("\",\n  \"message\": \"the process received signal ");
  o.integer(sig);
  o.text(" (");
  o.text(signal_name(sig));
  o.text(in_module ? ") inside operator '" : ") in the kernel after operator '");
  o.json_text(g_op);
  o.text("' at t=");
  o.integer(t);
  o.text(in_module ? ": the module crashed the process" : ": a bug of UML_OS");
  o.text("\",\n  \"replay_token\": \"");
  o.text(g_token);
  o.text("\",\n  \"signal\": ");
  o.integer(sig);
  o.text(",\n  \"exit_status\": ");
  o.integer(128 + sig);
  o.text("\n}\n");
}

void write_record(int sig) {
  Out o;
  format_record(o, sig);
  const int fd = ::openat(g_dir_fd, "failure.json.crash", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < o.n) {
    const ssize_t k = ::write(fd, o.buf + done, o.n - done);
    if (k <= 0) break;
    done += static_cast<size_t>(k);
  }
  ::fsync(fd);
  ::close(fd);
  ::renameat(g_dir_fd, "failure.json.crash", g_dir_fd, "failure.json");
  ::fsync(g_dir_fd);
}

void on_signal(int sig) {
  static std::atomic<bool> once{false};
  if (!once.exchange(true) && g_dir_fd >= 0) write_record(sig);
  // The signal's own ending: default action, raised again.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

void arm(int run_dir_fd, const std::string& replay_token_hex) {
  g_dir_fd = run_dir_fd;
  const size_t n = std::min(replay_token_hex.size(), sizeof g_token - 1);
  std::memcpy(g_token, replay_token_hex.data(), n);
  g_token[n] = 0;
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof g_alt_stack;
  ::sigaltstack(&ss, nullptr);  // a stack overflow still reaches the handler
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
  g_armed = true;
}

void disarm() {
  if (!g_armed) return;
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_dir_fd = -1;
  g_armed = false;
}

void enter_call(const char* op_name, int64_t t) {
  // The name is copied before the flag is set, so the handler never reads
  // a half-written name for the call it reports.
  g_in_module.store(false);
  size_t i = 0;
  for (; op_name && op_name[i] && i + 1 < kNameMax; ++i) g_op[i] = op_name[i];
  g_op[i] = 0;
  g_t.store(t);
  g_in_module.store(true);
}

void leave_call() { g_in_module.store(false); }

}  // namespace umlos::crash
