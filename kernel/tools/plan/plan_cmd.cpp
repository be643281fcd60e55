// plan_cmd.cpp — `umlos plan FILE [--strategy NAME] [--module PATH] [--json]
//                 [--svg OUT.svg] [--checkpoint OUT.cbor] [--option k=v]...
//                 [--alignment N] [--capacity BYTES]`
#include "plan_cmd.hpp"

#include <unistd.h>

#include <time.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <regex>

#include "conformance.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"

namespace umlos {
namespace plan {

std::string default_module_path() { return umlos::default_module_path("libumlos_tmmu.so"); }

static std::string with_ids(const std::string& message, const IntervalSet& set) {
  static const std::regex tensor_ref("tensor #([0-9]+)");
  std::string out;
  auto it = std::sregex_iterator(message.begin(), message.end(), tensor_ref);
  size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += message.substr(last, m.position(0) - last) + m.str(0);
    const unsigned long long idx = std::stoull(m.str(1));
    if (idx < set.tensors.size()) out += " (id '" + set.tensors[idx].id + "')";
    last = m.position(0) + m.length(0);
  }
  return out + message.substr(last);
}

PlanReport run_strategy(const IntervalSet& set, const std::string& module_path, const std::string& strategy,
                        const std::vector<std::string>& options, PhaseTimer* timer) {
  auto mark = [&](const char* phase) {
    if (timer) timer->mark(phase);
  };
  Host host;
  host.load(module_path, std::nullopt);
  const umlos_tmmu_strategy_desc* s = host.find_strategy(strategy);
  if (!s)
    throw Failure(UMLOS_NOT_FOUND, module_path + " offers no strategy '" + strategy +
                                       "' (UML_OS.TMMU.PlanMemory_v2 and UML_OS.TMMU.BytePlanner_v1 are "
                                       "the ones libumlos_tmmu.so offers)");
  mark("load");
  PlanInput in;
  make_request(set, options, in);
  PlanReport r;
  r.strategy = strategy;
  r.offsets.assign(set.tensors.size(), 0);
  r.slots.assign(set.tensors.size(), UMLOS_PLAN_NO_SLOT);
  r.arena_footprint.assign(set.arenas.size(), 0);
  umlos_plan_result result{};
  result.struct_size = sizeof(umlos_plan_result);
  result.offsets = r.offsets.data();
  result.slots = r.slots.data();
  result.arena_footprint = r.arena_footprint.data();
  auto thread_cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  mark("request");
  const uint64_t c0 = thread_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    host.plan(s, in.request, result);
  } catch (const Failure& f) {
    throw Failure(f.code(), set.source + ": " + with_ids(f.what(), set));
  }
  const auto t1 = std::chrono::steady_clock::now();
  r.allocation_cpu_ns = thread_cpu_ns() - c0;
  r.allocation_time_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  r.work_units = result.work_units;
  mark("plan");
  std::vector<std::string> ids;
  ids.reserve(set.tensors.size());
  for (const TensorSpec& t : set.tensors) ids.push_back(t.id);
  CheckOptions copt;
  copt.require_optimal_slots = (strategy == "UML_OS.TMMU.PlanMemory_v2");
  try {
    check_plan(in.request, result, copt, ids);
  } catch (const Failure& f) {
    throw Failure(f.code(), set.source + ": the plan of strategy '" + strategy + "' is invalid: " + f.what());
  }
  mark("check");
  r.metrics = compute_metrics(in.request, result);
  mark("metrics");
  return r;
}

}  // namespace plan

namespace {

const char* kUsage =
    "usage: umlos plan FILE [options]\n"
    "  Plans tensor memory for the liveness intervals in FILE with a TMMU strategy\n"
    "  module, checks the plan, and prints its metrics, lower bound and ratio.\n"
    "  FILE: umlos.intervals.v1 JSON (.json, .json.gz) or MiniMalloc CSV id,lower,upper,size\n"
    "        (half-open intervals).\n"
    "options:\n"
    "  --strategy NAME     UML_OS.TMMU.BytePlanner_v1 (default) or UML_OS.TMMU.PlanMemory_v2\n"
    "  --module PATH       strategy module (default <umlos folder>/modules/libumlos_tmmu.so)\n"
    "  --json              print {strategy, footprint_bytes, lower_bound_bytes, plan_hash,\n"
    "                      metrics, tensors:[{id, arena, offset, size, slot}]} instead of text\n"
    "  --svg OUT.svg       draw the plan (x = step, y = offset, lower bound dashed)\n"
    "  --checkpoint OUT    write the plan in the CBOR checkpoint form of spec 001 section 10\n"
    "  --option KEY=VALUE  strategy option: quality=fast|default|high|exact (or 0|1|2|3),\n"
    "                      work_budget=N, search_nodes=N, memory_bytes_budget=N,\n"
    "                      pilot=off|on|portfolio, pilot_budget=N (repeatable)\n"
    "  --alignment N       arena alignment for CSV input (default 1)\n"
    "  --capacity BYTES    capacity of every non-persistent arena (ARENA_TOO_SMALL if exceeded)\n"
    "  --timings           print the wall and CPU seconds of each phase (read, parse, plan,\n"
    "                      check, hash, output) on stderr\n"
    "see docs/tmmu.md\n";

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  std::string file, strategy = "UML_OS.TMMU.BytePlanner_v1", module_path, svg_out, checkpoint_out;
  std::vector<std::string> options;
  bool json = false, timings = false;
  uint64_t csv_alignment = 0, capacity = 0;
  try {
    auto need = [&](size_t& i) -> const std::string& {
      if (i + 1 >= args.size()) throw Failure(UMLOS_INVALID_ARGUMENT, "umlos plan: " + args[i] + " needs a value");
      return args[++i];
    };
    auto number = [&](const std::string& flag, const std::string& v) -> uint64_t {
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
        throw Failure(UMLOS_INVALID_ARGUMENT,
                      "umlos plan: " + flag + " expects a non-negative integer, got '" + v + "'");
      return std::stoull(v);
    };
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (a == "--strategy") {
        strategy = need(i);
      } else if (a == "--module") {
        module_path = need(i);
      } else if (a == "--json") {
        json = true;
      } else if (a == "--timings") {
        timings = true;
      } else if (a == "--svg") {
        svg_out = need(i);
      } else if (a == "--checkpoint") {
        checkpoint_out = need(i);
      } else if (a == "--option") {
        options.push_back(need(i));
      } else if (a == "--alignment") {
        csv_alignment = number(a, need(i));
      } else if (a == "--capacity") {
        capacity = number(a, need(i));
      } else if (!a.empty() && a[0] == '-') {
        throw Failure(UMLOS_INVALID_ARGUMENT, "umlos plan: unknown option '" + a + "' (see umlos plan --help)");
      } else if (file.empty()) {
        file = a;
      } else {
        throw Failure(UMLOS_INVALID_ARGUMENT, "umlos plan: one FILE expected, got '" + file + "' and '" + a + "'");
      }
    }
    if (file.empty()) throw Failure(UMLOS_INVALID_ARGUMENT, std::string("umlos plan: no FILE given\n") + kUsage);
    if (module_path.empty()) module_path = plan::default_module_path();
    plan::PhaseTimer timer;
    plan::IntervalSet set = plan::read_intervals(file, csv_alignment, &timer);
    if (capacity != 0)
      for (plan::ArenaSpec& ar : set.arenas)
        if (!ar.persistent) ar.capacity = capacity;
    plan::PlanReport report = plan::run_strategy(set, module_path, strategy, options, &timer);
    const Digest hash = plan::plan_hash(set, report);
    timer.mark("hash");
    if (!svg_out.empty()) write_file_atomic(svg_out, plan::to_svg(set, report));
    if (!checkpoint_out.empty()) write_file_atomic(checkpoint_out, plan::checkpoint_cbor(set, report));
    std::cout << (json ? plan::to_json(set, report, hash) : plan::to_text(set, report, hash));
    std::cout.flush();
    timer.mark("output");
    if (timings) std::cerr << timer.report();
    return 0;
  } catch (const Failure& f) {
    std::cerr << "umlos plan: " << f.what() << " [" << status_name(f.code()) << "]\n";
    return exit_code_for(f.code());
  } catch (const std::exception& e) {
    std::cerr << "umlos plan: internal error: " << e.what() << " [INTERNAL]\n";
    return exit_code_for(UMLOS_INTERNAL);
  }
}

}  // namespace umlos
