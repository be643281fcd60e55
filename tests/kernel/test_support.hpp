// test_support.hpp — helpers shared by the kernel tests: module paths,
// temporary folders, pinned manifests written on the fly, running `umlos`.
#pragma once

#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "host_tensor.hpp"
#include "loader.hpp"
#include "sha256.hpp"

namespace umlos_test {

inline std::string module_path(const std::string& name) {
  return std::string(UMLOS_MODULE_DIR) + "/lib" + name + ".so";
}

// CPUs this process may run on (and so the umlos processes it starts).
inline int usable_cores() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  REQUIRE(::sched_getaffinity(0, sizeof cpus, &cpus) == 0);
  return CPU_COUNT(&cpus);
}

// A fresh, empty folder under the system temp dir (left for inspection).
inline std::string temp_dir(const std::string& tag) {
  static int counter = 0;
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("umlos-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Every line of `text` with `pad` in front (YAML nested under a key).
inline std::string indent(const std::string& text, const std::string& pad) {
  std::string out, line;
  std::stringstream lines(text);
  while (std::getline(lines, line)) out += pad + line + "\n";
  return out;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// YAML lines pinning each module at its current digest.
inline std::string pinned_modules(const std::vector<std::string>& paths) {
  std::string y = "modules:\n";
  for (const std::string& p : paths) {
    y += "  - path: \"" + p + "\"\n    sha256: " + umlos::to_hex(umlos::hash_module_file(p)) + "\n";
  }
  return y;
}

// The demo-walk manifest with the given operators block and step count.
inline std::string walk_manifest(const std::vector<std::string>& modules, const std::string& operators, int steps = 30,
                                 int threads = 1, uint64_t seed = 7) {
  return "umlos_manifest: 1\nname: walk_test\nseed: " + std::to_string(seed) + "\n" + pinned_modules(modules) +
         "driver:\n  name: cpu_driver\n  config: {threads: " + std::to_string(threads) + "}\n" + "operators:\n" +
         operators + "config:\n  max_steps: " + std::to_string(steps) +
         "\n  walk: {dim: 16, sigma: 0.1, lr: 0.05, probe_every: 7}\n";
}

inline const char* kWalkOperators =
    "  next_batch_op: UML_OS.Demo.RandomWalkStep_v1\n"
    "  policy_op: UML_OS.Demo.EveryNthProbePolicy_v1\n"
    "  update_op: UML_OS.Demo.ShrinkUpdate_v1\n"
    "  probe_op: UML_OS.Demo.SpreadProbe_v1\n";

struct CommandResult {
  int exit_status = -1;
  std::string output;  // stdout and stderr together
};

// Runs `umlos ARGS` through the shell with environment assignments first
// ("NAME='value' ...", or none), capturing output and exit status.
inline CommandResult run_umlos_env(const std::string& env, const std::string& args) {
  std::string cmd = env + " '" + UMLOS_EXE + "' " + args + " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline CommandResult run_umlos(const std::string& args) { return run_umlos_env("", args); }

// `umlos conformance MODULE` passes and its report names each of `operators`.
inline void check_conformance_passes(const std::string& module, std::initializer_list<const char*> operators) {
  CommandResult r = run_umlos("conformance '" + module_path(module) + "'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK_THAT(r.output, Catch::Contains("conformance: PASS"));
  for (const char* op : operators) CHECK_THAT(r.output, Catch::Contains(op));
}

}  // namespace umlos_test
