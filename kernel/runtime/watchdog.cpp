// watchdog.cpp — see watchdog.hpp.
#include "watchdog.hpp"

#include <cstdio>
#include <cstdlib>

#include "error.hpp"

namespace umlos {

std::string deadline_message(const std::string& op, int64_t t, double limit_s, const char* key) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", limit_s);
  return "operator '" + op + "' at t=" + std::to_string(t) + " ran longer than " + key + " = " + limit +
         " s (stopped; the call never returned)";
}

Watchdog::Watchdog(double limit_s, Handler on_expiry) : limit_s_(limit_s), on_expiry_(std::move(on_expiry)) {
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string& op, int64_t t) {
  std::lock_guard<std::mutex> lk(m_);
  if (depth_++ > 0) return;
  op_ = op;
  t_ = t;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit_s_));
  cv_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lk(m_);  // blocks for good once the handler runs
  if (depth_ > 0) --depth_;
  cv_.notify_all();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lk(m_);
  while (!stop_) {
    if (depth_ == 0) {
      cv_.wait(lk);
      continue;
    }
    if (std::chrono::steady_clock::now() < deadline_) {
      cv_.wait_until(lk, deadline_);
      continue;
    }
    // Expired and still armed: record and end the process, lock held.
    const std::string msg = deadline_message(op_, t_, limit_s_, "budgets.op_timeout_s");
    if (on_expiry_) on_expiry_(msg);
    std::fprintf(stderr, "umlos: %s: %s\n", status_name(UMLOS_QUOTA_EXCEEDED), msg.c_str());
    std::fflush(stderr);
    std::_Exit(exit_code_for(UMLOS_QUOTA_EXCEEDED));
  }
}

}  // namespace umlos
