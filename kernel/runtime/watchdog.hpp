// watchdog.hpp — a per-call time limit for operator calls (manifest key
// budgets.op_timeout_s; off by default).
//
// An operator that never returns cannot be unwound: its thread is inside
// module code. The watchdog therefore runs on its own thread and, when an
// armed call outlives the limit, calls the handler (which records the
// failure and ends the process) while holding the watchdog's lock, so the
// stuck call, should it return meanwhile, waits in disarm() instead of
// running on. A handler that returns is followed by std::_Exit with the
// QUOTA_EXCEEDED exit status. Nothing here touches the run's results: the
// watchdog only reads the clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace umlos {

class Watchdog {
 public:
  // The message names the operator, the iteration t and the limit.
  using Handler = std::function<void(const std::string& message)>;
  Watchdog(double limit_s, Handler on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts timing one call (nested calls keep the outermost one's clock).
  void arm(const std::string& op, int64_t t);
  void disarm();
  double limit_s() const { return limit_s_; }

 private:
  void loop();

  const double limit_s_;
  Handler on_expiry_;
  std::mutex m_;
  std::condition_variable cv_;
  int depth_ = 0;
  bool stop_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string op_;
  int64_t t_ = 0;
  std::thread thread_;
};

// The message a call over its limit fails with.
std::string deadline_message(const std::string& op, int64_t t, double limit_s, const char* key);

}  // namespace umlos
