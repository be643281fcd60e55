// tmmu_bench — footprint / lower bound and planning time of the TMMU
// strategies (module build/modules/libumlos_tmmu.so, loaded by a Host) on
// the public instances of tests/data/memory-planning-bench, on network graphs
// derived from published layer shapes, and on large generated workloads.
//
//   tmmu_bench files   [--bench-dir DIR]   every CSV of the benchmark set
//   tmmu_bench nets                        ResNet-50, GPT-2 small, BERT-base
//   tmmu_bench scale   [--max N] [--period P] [--overlap O]
//                                          generated mixed workloads 1e3..1e6
//   tmmu_bench quality [--bench-dir DIR]   MiniMalloc A..K: default and quality=exact
//   tmmu_bench export DIR                  write the network graphs as JSON
//
// Every plan is checked (kernel checker) before its numbers are printed.
// Times are the CPU time of the thread running plan() (the planner is
// single-threaded; CPU time is what a shared 2-core machine measures
// reliably); ratios are footprint / LB summed over the arenas that reuse
// memory (persistent arenas always equal their LB).
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "error.hpp"
#include "fsutil.hpp"
#include "plan/checker.hpp"
#include "plan/intervals.hpp"
#include "plan/plan_cmd.hpp"
#include "plan/plan_output.hpp"
#include "workloads.hpp"

using namespace umlos;
using namespace umlos::plan;

namespace {

std::string g_module = std::string(UMLOS_MODULE_DIR) + "/libumlos_tmmu.so";
std::vector<std::string> g_byte_options;
bool g_baselines = true;
std::string g_filter;  // --filter SUBSTR: only files whose path contains it
const char* kSlot = "UML_OS.TMMU.PlanMemory_v2";
const char* kByte = "UML_OS.TMMU.BytePlanner_v1";

struct Row {
  std::string name;
  uint64_t n = 0, max_live = 0, lb = 0;
  double slot_ratio = 0, gbs_ratio = 0, byte_ratio = 0;
  double slot_ms = 0, byte_ms = 0;
  uint64_t byte_work = 0;
};

// footprint / LB over the arenas that reuse memory (a persistent arena is
// always exactly its LB and would only dilute the ratio).
double ratio(const PlanReport& r, const IntervalSet& s) {
  uint64_t f = 0, lb = 0;
  for (size_t a = 0; a < s.arenas.size(); ++a) {
    if (s.arenas[a].persistent) continue;
    f += r.arena_footprint[a];
    lb += r.metrics[a].lower_bound;
  }
  return lb ? static_cast<double>(f) / static_cast<double>(lb) : 1.0;
}
uint64_t reuse_lb(const PlanReport& r, const IntervalSet& s) {
  uint64_t lb = 0;
  for (size_t a = 0; a < s.arenas.size(); ++a)
    if (!s.arenas[a].persistent) lb += r.metrics[a].lower_bound;
  return lb;
}

Row measure(const IntervalSet& set, const std::vector<std::string>& byte_options = {}, bool with_slot = true,
            bool with_gbs = true) {
  Row row;
  row.name = set.name;
  row.n = set.tensors.size();
  PlanReport byte = run_strategy(set, g_module, kByte, byte_options);
  row.byte_ratio = ratio(byte, set);
  row.byte_ms = byte.allocation_cpu_ns / 1e6;
  row.byte_work = byte.work_units;
  row.lb = reuse_lb(byte, set);
  for (size_t a = 0; a < set.arenas.size(); ++a)
    if (!set.arenas[a].persistent) row.max_live = std::max(row.max_live, byte.metrics[a].max_live);
  if (with_slot) {
    PlanReport slot = run_strategy(set, g_module, kSlot, {});
    row.slot_ratio = ratio(slot, set);
    row.slot_ms = slot.allocation_cpu_ns / 1e6;
  }
  if (with_gbs) row.gbs_ratio = ratio(run_strategy(set, g_module, kByte, {"baseline=greedy_by_size"}), set);
  return row;
}

void header() {
  std::printf(
      "| instance | n | max live | LB (bytes) | slot planner / LB | greedy by size / LB | "
      "byte planner / LB | byte planner CPU ms | slot planner CPU ms |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

void print(const Row& r) {
  std::printf("| %s | %llu | %llu | %llu | %.4f | %.4f | %.4f | %.1f | %.1f |\n", r.name.c_str(),
              (unsigned long long)r.n, (unsigned long long)r.max_live, (unsigned long long)r.lb, r.slot_ratio,
              r.gbs_ratio, r.byte_ratio, r.byte_ms, r.slot_ms);
  std::fflush(stdout);
}

std::vector<std::string> csv_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* sub : {"synthetic", "minimalloc-challenging", "idealloc"}) {
    const std::string d = dir + "/" + sub;
    DIR* h = opendir(d.c_str());
    if (!h) continue;
    std::vector<std::string> names;
    while (dirent* e = readdir(h)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".csv") == 0) names.push_back(d + "/" + n);
    }
    closedir(h);
    std::sort(names.begin(), names.end());
    names.erase(std::remove_if(names.begin(), names.end(),
                               [](const std::string& n) { return n.find(g_filter) == std::string::npos; }),
                names.end());
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

std::vector<IntervalSet> networks() {
  std::vector<IntervalSet> v;
  v.push_back(bench::resnet50(1, false));
  v.push_back(bench::resnet50(32, false));
  v.push_back(bench::resnet50(32, true));
  v.push_back(bench::gpt2_small(1, 1024, false));
  v.push_back(bench::gpt2_small(1, 1024, true));
  v.push_back(bench::bert_base(8, 512, true));
  return v;
}

// A set as a umlos.intervals.v1 document (one line per tensor).
std::string to_intervals_json(const IntervalSet& s, uint64_t alignment) {
  nlohmann::json head;
  head["format"] = "umlos.intervals.v1";
  head["name"] = s.name;
  head["alignment"] = alignment;
  head["mode"] = s.mode;
  std::string out = head.dump();
  out.pop_back();  // reopen the object for the tensors
  out += ",\"tensors\":[\n";
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const TensorSpec& t = s.tensors[i];
    nlohmann::json e{
        {"id", t.id}, {"arena", s.arenas[t.arena].name}, {"size", t.size}, {"begin", t.begin}, {"end", t.end}};
    if (t.alias_group) e["alias_group"] = t.alias_group;
    if (t.flags & UMLOS_PLAN_SAVED_FOR_BACKWARD) e["saved_for_backward"] = true;
    out += e.dump();
    out += i + 1 < s.tensors.size() ? ",\n" : "\n";
  }
  return out + "]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string bench_dir = std::string(UMLOS_TEST_DATA_DIR) + "/memory-planning-bench";
  uint64_t max_n = 1000000, min_n = 1000, period = 0;
  int64_t overlap = 3;
  uint64_t alignment = 64;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--bench-dir" && i + 1 < args.size())
      bench_dir = args[++i];
    else if (args[i] == "--module" && i + 1 < args.size())
      g_module = args[++i];
    else if (args[i] == "--max" && i + 1 < args.size())
      max_n = std::stoull(args[++i]);
    else if (args[i] == "--min" && i + 1 < args.size())
      min_n = std::stoull(args[++i]);
    else if (args[i] == "--option" && i + 1 < args.size())
      g_byte_options.push_back(args[++i]);
    else if (args[i] == "--no-baselines")
      g_baselines = false;
    else if (args[i] == "--filter" && i + 1 < args.size())
      g_filter = args[++i];
    else if (args[i] == "--period" && i + 1 < args.size())
      period = std::stoull(args[++i]);
    else if (args[i] == "--overlap" && i + 1 < args.size())
      overlap = std::stoll(args[++i]);
    else if (args[i] == "--alignment" && i + 1 < args.size())
      alignment = std::stoull(args[++i]);
  }
  const std::string cmd = args.empty() ? "" : args[0];
  try {
    if (cmd == "files") {
      header();
      for (const std::string& f : csv_files(bench_dir)) {
        IntervalSet s = read_intervals(f);
        s.name = f.substr(bench_dir.size() + 1);
        print(measure(s, g_byte_options, g_baselines, g_baselines));
      }
    } else if (cmd == "nets") {
      header();
      for (const IntervalSet& s : networks()) print(measure(s, g_byte_options, g_baselines, g_baselines));
    } else if (cmd == "scale") {
      header();
      for (uint64_t n = min_n; n <= max_n; n *= 10)
        print(measure(bench::mixed_workload(n, 1, period, overlap), g_byte_options, g_baselines,
                      g_baselines && n <= 100000));
    } else if (cmd == "quality") {
      // quality=exact with the capacity of the file name (A.1048576.csv:
      // 1,048,576 bytes) as the arena capacity: the canonical search's target.
      std::printf(
          "| instance | n | LB | greedy by size / LB | default / LB | default CPU ms | quality=exact footprint | "
          "exact / LB | fits capacity | exact CPU ms | exact work units |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
      for (const std::string& f : csv_files(bench_dir)) {
        if (f.find("minimalloc-challenging") == std::string::npos) continue;
        IntervalSet s = read_intervals(f);
        const std::string base = f.substr(f.find_last_of('/') + 1);
        const uint64_t cap = std::stoull(base.substr(base.find('.') + 1));
        PlanReport g = run_strategy(s, g_module, kByte, {"baseline=greedy_by_size"});
        PlanReport d = run_strategy(s, g_module, kByte, {});
        for (auto& a : s.arenas)
          if (!a.persistent) a.capacity = cap;
        std::vector<std::string> opts = {"quality=exact"};
        opts.insert(opts.end(), g_byte_options.begin(), g_byte_options.end());
        PlanReport q;
        try {
          q = run_strategy(s, g_module, kByte, opts);
        } catch (const Failure&) {  // ARENA_TOO_SMALL: show the footprint it reached
          for (auto& a : s.arenas) a.capacity = 0;
          q = run_strategy(s, g_module, kByte, opts);
        }
        std::printf("| %s | %zu | %llu | %.4f | %.4f | %.1f | %llu | %.4f | %s | %.0f | %llu |\n", base.c_str(),
                    s.tensors.size(), (unsigned long long)q.lower_bound_bytes(), ratio(g, s), ratio(d, s),
                    d.allocation_cpu_ns / 1e6, (unsigned long long)q.footprint_bytes(), ratio(q, s),
                    q.footprint_bytes() <= cap ? "yes" : "no", q.allocation_cpu_ns / 1e6,
                    (unsigned long long)q.work_units);
        std::fflush(stdout);
      }
    } else if (cmd == "export" && args.size() >= 2) {
      // The networks, and the periodic mixed workload's 10^4 instance (to
      // compare plans across builds with `umlos plan --module ... --json`).
      std::vector<IntervalSet> sets = networks();
      sets.push_back(bench::mixed_workload(10000, 1, 4, 6));
      for (const IntervalSet& s : sets) write_file_atomic(args[1] + "/" + s.name + ".json", to_intervals_json(s, 128));
    } else if (cmd == "export-mixed" && args.size() >= 4) {
      // One mixed workload of about N tensors with seed SEED, as a
      // umlos.intervals.v1 file for `umlos plan` (--period/--overlap as for
      // `scale`; --alignment A, default 64: sizes that are not multiples of
      // it are padded by the planner, as in real activations).
      const uint64_t n = std::stoull(args[2]), seed = std::stoull(args[3]);
      write_file_atomic(args[1], to_intervals_json(bench::mixed_workload(n, seed, period, overlap), alignment));
    } else {
      std::fprintf(stderr,
                   "usage: tmmu_bench files|nets|scale|quality|export DIR|export-mixed FILE N SEED "
                   "[--bench-dir DIR] [--max N] [--module PATH] [--period P] [--overlap O] [--alignment A]\n");
      return 2;
    }
  } catch (const Failure& f) {
    std::fprintf(stderr, "tmmu_bench: %s [%s]\n", f.what(), status_name(f.code()));
    return 1;
  }
  return 0;
}
