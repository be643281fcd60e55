// `umlos plan` end to end: the real binary, the real module file.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "error.hpp"

namespace {

struct Run {
  int status = -1;
  std::string out;
};

// Runs `umlos plan ARGS` (stderr folded into the output).
Run umlos_plan(const std::string& args) {
  Run r;
  const std::string cmd = std::string(UMLOS_EXE) + " plan " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

const std::string kExample =
    std::string(UMLOS_TEST_DATA_DIR) + "/memory-planning-bench/synthetic/pisarchyk_lee_fig_example.csv";

std::string temp_path(const std::string& name) { return std::string(UMLOS_BINARY_DIR) + "/tmmu_cli_" + name; }

}  // namespace

TEST_CASE("umlos plan --json prints the plan, its lower bound and hash", "[tmmu][cli]") {
  Run r = umlos_plan(kExample + " --json");
  INFO(r.out);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["strategy"] == "UML_OS.TMMU.BytePlanner_v1");
  CHECK(j["footprint_bytes"] == 124);
  CHECK(j["lower_bound_bytes"] == 124);
  CHECK(j["plan_hash"].get<std::string>().size() == 64);
  CHECK(j["tensors"].size() == 8);
  CHECK(j["tensors"][0].contains("offset"));
  CHECK(j["tensors"][0]["slot"].is_null());
  CHECK(j["metrics"].contains("internal_fragmentation_ratio"));
  Run slot = umlos_plan(kExample + " --json --strategy UML_OS.TMMU.PlanMemory_v2");
  REQUIRE(slot.status == 0);
  auto js = nlohmann::json::parse(slot.out);
  CHECK(js["metrics"]["peak_logical_slots"] == js["metrics"]["max_live"]);
  CHECK(js["footprint_bytes"].get<uint64_t>() > 124);
}

TEST_CASE("umlos plan --svg draws one rectangle per tensor and the lower bound", "[tmmu][cli]") {
  const std::string svg = temp_path("plan.svg");
  std::remove(svg.c_str());
  Run r = umlos_plan(kExample + " --svg " + svg);
  REQUIRE(r.status == 0);
  std::ifstream f(svg);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  CHECK(text.rfind("<svg", 0) == 0);
  size_t rects = 0;
  for (size_t p = text.find("<title>"); p != std::string::npos; p = text.find("<title>", p + 1)) ++rects;
  CHECK(rects == 8);
  CHECK(text.find("lower bound 124") != std::string::npos);
}

TEST_CASE("umlos plan refuses bad input with the 0.K code name and its exit status", "[tmmu][cli]") {
  const std::string bad = temp_path("bad.json");
  {
    std::ofstream f(bad);
    f << R"({"format": "umlos.intervals.v1", "tensors": [{"id": "x", "size": 0, "begin": 0, "end": 1}]})";
  }
  Run r = umlos_plan(bad);
  CHECK(r.status == umlos::exit_code_for(UMLOS_INVALID_IR_SHAPES));
  CHECK(r.out.find("INVALID_IR_SHAPES") != std::string::npos);
  CHECK(r.out.find("'x'") != std::string::npos);
  Run cap = umlos_plan(kExample + " --capacity 100");
  CHECK(cap.status == umlos::exit_code_for(UMLOS_ARENA_TOO_SMALL));
  CHECK(cap.out.find("ARENA_TOO_SMALL") != std::string::npos);
  Run missing = umlos_plan(temp_path("does_not_exist.json"));
  CHECK(missing.status == umlos::exit_code_for(UMLOS_IO_ERROR));
  Run flag = umlos_plan(kExample + " --frobnicate");
  CHECK(flag.status == umlos::exit_code_for(UMLOS_INVALID_ARGUMENT));
}

TEST_CASE("umlos plan --timings prints every phase's wall and CPU seconds and leaves the plan unchanged",
          "[tmmu][cli]") {
  const Run plain = umlos_plan(kExample);
  const Run timed = umlos_plan(kExample + " --timings");
  REQUIRE(plain.status == 0);
  REQUIRE(timed.status == 0);
  for (const char* phase : {"read", "parse", "load", "request", "plan", "check", "metrics", "hash", "output", "total"})
    CHECK(timed.out.find(std::string("\n  ") + phase + " ") != std::string::npos);
  CHECK(timed.out.find("timings (wall s, process cpu s):") != std::string::npos);
  CHECK(plain.out.find("timings") == std::string::npos);
  // The plan itself (hash line) is the same with and without the timings.
  const size_t h = plain.out.find("plan_hash ");
  REQUIRE(h != std::string::npos);
  CHECK(timed.out.find(plain.out.substr(h, 75)) != std::string::npos);
}
