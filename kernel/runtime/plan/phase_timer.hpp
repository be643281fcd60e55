// phase_timer.hpp — wall and CPU seconds of the phases of `umlos plan`
// (reading, gunzip, parsing, planning, checking, hashing, printing), printed
// by `umlos plan --timings` on stderr. Timings are never part of a plan or
// its hash; they only tell where the time of a command goes.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace umlos::plan {

class PhaseTimer {
 public:
  PhaseTimer() { restart(); }
  // Starts the next phase now (the time since the last mark is dropped).
  void restart() {
    wall_ = std::chrono::steady_clock::now();
    cpu_ = cpu_now();
  }
  // Ends the current phase, names it, and starts the next one.
  void mark(const std::string& name) {
    const auto w = std::chrono::steady_clock::now();
    const double c = cpu_now();
    phases_.push_back({name, std::chrono::duration<double>(w - wall_).count(), c - cpu_});
    wall_ = w;
    cpu_ = c;
  }
  // One line per phase and the total: "name  wall s  cpu s".
  std::string report() const {
    std::string out = "timings (wall s, process cpu s):\n";
    double tw = 0, tc = 0;
    char line[160];
    for (const Phase& p : phases_) {
      std::snprintf(line, sizeof line, "  %-10s %9.3f %9.3f\n", p.name.c_str(), p.wall, p.cpu);
      out += line;
      tw += p.wall;
      tc += p.cpu;
    }
    std::snprintf(line, sizeof line, "  %-10s %9.3f %9.3f\n", "total", tw, tc);
    return out + line;
  }

 private:
  struct Phase {
    std::string name;
    double wall, cpu;
  };
  static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_ = 0;
  std::vector<Phase> phases_;
};

}  // namespace umlos::plan
