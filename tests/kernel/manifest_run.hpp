// manifest_run.hpp — a manifest written on the fly and run in-process
// (run_manifest, quiet) into a fresh run folder, for the runner and policy
// tests that read its trace and failure record.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "procedure.hpp"
#include "test_support.hpp"

namespace umlos_test {

struct ManifestRun {
  int exit_status;
  std::string dir;
  std::string trace() const { return read_text(dir + "/trace.jsonl"); }
  nlohmann::json failure() const { return nlohmann::json::parse(read_text(dir + "/failure.json")); }
};

inline ManifestRun run_manifest_text(const std::string& manifest_text, const std::string& tag) {
  std::string dir = temp_dir(tag);
  std::string file = dir + "/manifest.yaml";
  write_text(file, manifest_text);
  umlos::RunOptions opt;
  opt.run_dir = dir + "/run";
  opt.quiet = true;
  return ManifestRun{umlos::run_manifest(file, opt), opt.run_dir};
}

}  // namespace umlos_test
