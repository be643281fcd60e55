// run_support.hpp — `umlos run` of the shipped manifests as a real process,
// for the end-to-end tests (tests/kernel/training.tests.cpp,
// tests/symbolic/symbolic_kernel.tests.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace umlos_test {

// build/manifests/NAME.yaml: the pinned copy the build writes.
inline std::string pinned_manifest(const std::string& name) {
  return std::string(UMLOS_BINARY_DIR) + "/manifests/" + name + ".yaml";
}

// A variant of a shipped pinned manifest, written beside it (its module and
// data paths are relative to that folder), with text replacements; each
// `from` must occur.
inline std::string variant(const std::string& name, const std::string& tag,
                           const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = read_text(pinned_manifest(name));
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  const std::string out = std::string(UMLOS_BINARY_DIR) + "/manifests/test_" + name + "_" + tag + ".yaml";
  // Tests running in parallel (ctest -j) may write the same variant: each
  // writes its own temporary file and renames it, so a reader never sees a
  // half-written manifest.
  static int serial = 0;
  const std::string tmp = out + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++serial);
  write_text(tmp, text);
  std::filesystem::rename(tmp, out);
  return out;
}

// The records of a trace.jsonl, in order.
inline std::vector<nlohmann::json> records(const std::string& trace) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_text(trace));
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Starts `umlos run -q --run-dir DIR MANIFEST` with UML_OS_ROOT=ROOT as a
// child process, for the tests that act on a run while it is in its loop.
inline pid_t spawn_run(const std::string& manifest, const std::string& root, const std::string& dir) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("UML_OS_ROOT", root.c_str(), 1);
    ::execl(UMLOS_EXE, UMLOS_EXE, "run", "-q", "--run-dir", dir.c_str(), manifest.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Starts `umlos ARGS...` with UML_OS_ROOT=ROOT as a child process.
inline pid_t spawn_umlos(const std::vector<std::string>& args, const std::string& root) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("UML_OS_ROOT", root.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(UMLOS_EXE));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(UMLOS_EXE, argv.data());
    ::_exit(127);
  }
  return pid;
}

// The state_fp of every iter record of a trace, in order.
inline std::vector<std::string> state_fps(const std::string& trace) {
  std::vector<std::string> out;
  for (const nlohmann::json& r : records(trace))
    if (r.value("record", "") == "iter") out.push_back(r.at("state_fp").get<std::string>());
  return out;
}

// Runs MANIFEST into a fresh run folder with its own UML_OS_ROOT.
struct Run {
  CommandResult result;
  std::string dir;
  std::string trace() const { return dir + "/trace.jsonl"; }
};
inline Run run(const std::string& manifest, const std::string& tag, const std::string& extra = "") {
  const std::string root = temp_dir("run-root-" + tag);
  Run r;
  r.dir = root + "/run";
  r.result =
      run_umlos_env("UML_OS_ROOT='" + root + "'", "run -q --run-dir '" + r.dir + "' " + extra + " '" + manifest + "'");
  return r;
}

// run() that must succeed: the run's output is shown when it does not.
inline Run run_ok(const std::string& manifest, const std::string& tag, const std::string& extra = "") {
  Run r = run(manifest, tag, extra);
  INFO(r.result.output);
  REQUIRE(r.result.exit_status == 0);
  return r;
}

}  // namespace umlos_test
