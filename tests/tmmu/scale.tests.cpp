// The byte planner at 10^6 tensors (docs/tmmu.md, "never more bytes than
// greedy by size"): mixed workloads of bench/tmmu's generator, seeds the
// planner was not tuned on, one plan each at the default quality and the
// two greedy-by-size baselines. Hidden from the default run ([.scale]: about
// a minute of CPU each); ctest runs them under the label tmmu_scale.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan/intervals.hpp"
#include "plan/plan_cmd.hpp"
#include "plan/plan_output.hpp"
#include "workloads.hpp"

using namespace umlos;
using namespace umlos::plan;

namespace {

const std::string kModule = std::string(UMLOS_MODULE_DIR) + "/libumlos_tmmu.so";
const std::string kByte = "UML_OS.TMMU.BytePlanner_v1";

void never_above_greedy_by_size(uint64_t seed) {
  IntervalSet s = bench::mixed_workload(1000000, seed);
  for (ArenaSpec& a : s.arenas) a.alignment = 64;  // sizes not multiples of 64 get padded
  REQUIRE(s.tensors.size() >= 1000000);
  const PlanReport plan = run_strategy(s, kModule, kByte, {});  // checked by the kernel checker
  const PlanReport best_fit = run_strategy(s, kModule, kByte, {"baseline=greedy_by_size"});
  const PlanReport first_fit = run_strategy(s, kModule, kByte, {"baseline=greedy_by_size_first_fit"});
  for (size_t a = 0; a < s.arenas.size(); ++a) {
    INFO("seed " << seed << " arena " << s.arenas[a].name << ": plan " << plan.arena_footprint[a] << ", best fit "
                 << best_fit.arena_footprint[a] << ", first fit " << first_fit.arena_footprint[a] << ", LB "
                 << plan.metrics[a].lower_bound);
    CHECK(plan.arena_footprint[a] <= best_fit.arena_footprint[a]);
    CHECK(plan.arena_footprint[a] <= first_fit.arena_footprint[a]);
    CHECK(plan.arena_footprint[a] >= plan.metrics[a].lower_bound);
  }
}

}  // namespace

TEST_CASE("At 10^6 tensors the byte planner never uses more bytes than greedy by size on the mixed workload of seed 2",
          "[tmmu][.scale]") {
  never_above_greedy_by_size(2);
}

TEST_CASE("At 10^6 tensors the byte planner never uses more bytes than greedy by size on the mixed workload of seed 3",
          "[tmmu][.scale]") {
  never_above_greedy_by_size(3);
}
