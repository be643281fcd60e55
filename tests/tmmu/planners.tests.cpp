// Tests of the two TMMU strategies through the real module file
// (build/modules/libumlos_tmmu.so loaded by a Host), every plan checked by
// the kernel checker (kernel/runtime/plan/checker.cpp).
#include <catch2/catch.hpp>

#include <functional>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zlib.h>

#include "cbor.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "plan/checker.hpp"
#include "plan/intervals.hpp"
#include "plan/plan_cmd.hpp"
#include "plan/plan_output.hpp"
#include "plan_apply.hpp"

using namespace umlos;
using namespace umlos::plan;

namespace {

const std::string kModule = std::string(UMLOS_MODULE_DIR) + "/libumlos_tmmu.so";
const std::string kSlot = "UML_OS.TMMU.PlanMemory_v2";
const std::string kByte = "UML_OS.TMMU.BytePlanner_v1";
const std::string kBench = std::string(UMLOS_TEST_DATA_DIR) + "/memory-planning-bench";

IntervalSet one_arena(uint64_t alignment) {
  IntervalSet s;
  s.source = "test";
  s.arenas = {{"activations", alignment, 0, false}};
  return s;
}

void add(IntervalSet& s, const std::string& id, uint64_t size, int64_t b, int64_t e, uint32_t arena = 0) {
  TensorSpec t;
  t.id = id;
  t.size = t.actual_size = size;
  t.begin = b;
  t.end = e;
  t.arena = arena;
  s.tensors.push_back(t);
}

void sort_ids(IntervalSet& s) {
  std::sort(s.tensors.begin(), s.tensors.end(), [](const TensorSpec& a, const TensorSpec& b) { return a.id < b.id; });
}

// Random residual-style graph: chain with skips, mixed sizes, 3 arenas.
IntervalSet random_graph(uint32_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  IntervalSet s;
  s.source = "random" + std::to_string(seed);
  s.arenas = {{"parameters", 128, 0, true}, {"activations", 128, 0, false}, {"gradients", 64, 0, false}};
  for (size_t i = 0; i < n; ++i) {
    const uint32_t arena = (i % 7 == 0) ? 0 : (i % 5 == 0 ? 2 : 1);
    const int64_t b = static_cast<int64_t>(i / 2);
    const int64_t len = (rng() % 10 == 0) ? static_cast<int64_t>(rng() % 60) : static_cast<int64_t>(rng() % 4);
    const uint64_t size = 1 + (rng() % 4 == 0 ? rng() % 1000000 : rng() % 5000);
    char id[16];
    std::snprintf(id, sizeof id, "t%05zu", i);
    add(s, id, size, b, b + len, arena);
  }
  sort_ids(s);
  return s;
}

// Greedy by size (sizes descending, then longer first, then id), best fit
// including the leading gap (Pisarchyk and Lee) or first fit (TFLite
// Micro): an independent O(n^2) implementation of the baselines the byte
// planner must never exceed.
uint64_t greedy_by_size(const IntervalSet& s, uint32_t arena, bool best_fit = true) {
  std::vector<const TensorSpec*> ts;
  for (const auto& t : s.tensors)
    if (t.arena == arena) ts.push_back(&t);
  const uint64_t al = s.arenas[arena].alignment;
  auto asz = [&](const TensorSpec* t) { return (t->size + al - 1) / al * al; };
  std::vector<size_t> order(ts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (asz(ts[x]) != asz(ts[y])) return asz(ts[x]) > asz(ts[y]);
    const int64_t dx = ts[x]->end - ts[x]->begin, dy = ts[y]->end - ts[y]->begin;
    if (dx != dy) return dx > dy;
    return x < y;
  });
  std::vector<uint64_t> off(ts.size(), 0);
  std::vector<size_t> placed;
  uint64_t top = 0;
  for (size_t i : order) {
    std::vector<std::pair<uint64_t, uint64_t>> blocks;
    for (size_t j : placed)
      if (ts[j]->begin <= ts[i]->end && ts[i]->begin <= ts[j]->end) blocks.push_back({off[j], off[j] + asz(ts[j])});
    std::sort(blocks.begin(), blocks.end());
    uint64_t cursor = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (auto& b : blocks) {
      if (b.first > cursor && b.first - cursor >= asz(ts[i]) && b.first - cursor < best_gap) {
        best_gap = b.first - cursor;
        best = cursor;
        if (!best_fit) break;
      }
      cursor = std::max(cursor, b.second);
    }
    off[i] = best == UINT64_MAX ? cursor : best;
    top = std::max(top, off[i] + asz(ts[i]));
    placed.push_back(i);
  }
  return top;
}

umlos_status failure_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    return e.code();
  }
  return UMLOS_OK;
}

std::string failure_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    return e.what();
  }
  return "";
}

// Three concurrent plans of `s` (fresh loads of the module on three
// threads) equal `ref`: same offsets and work units.
void check_same_on_threads(const IntervalSet& s, const PlanReport& ref, const std::vector<std::string>& opts = {}) {
  std::vector<PlanReport> got(3);
  std::vector<std::thread> th;
  for (int k = 0; k < 3; ++k) th.emplace_back([&, k] { got[k] = run_strategy(s, kModule, kByte, opts); });
  for (auto& t : th) t.join();
  for (const PlanReport& g : got) {
    CHECK(g.offsets == ref.offsets);
    CHECK(g.work_units == ref.work_units);
    CHECK(plan_hash(s, g) == plan_hash(s, ref));
  }
}

}  // namespace

TEST_CASE("The slot planner uses exactly max-live slots per arena", "[tmmu]") {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    IntervalSet s = random_graph(seed, 400);
    PlanReport r = run_strategy(s, kModule, kSlot, {});  // run_strategy checks slot optimality
    PlanInput in;
    make_request(s, {}, in);
    const auto facts = arena_facts(in.request);
    for (size_t a = 0; a < s.arenas.size(); ++a) CHECK(r.metrics[a].peak_logical_slots == facts[a].max_live);
  }
}

TEST_CASE("A linear chain whose tensors never coexist plans into one slot", "[tmmu]") {
  IntervalSet s = one_arena(128);
  for (int i = 0; i < 20; ++i) add(s, "c" + std::to_string(100 + i), 1000 + 10 * i, i, i);
  PlanReport r = run_strategy(s, kModule, kSlot, {});
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    CHECK(r.slots[i] == 0);
    CHECK(r.offsets[i] == 0);
  }
  CHECK(r.arena_footprint[0] == 1280);  // align_up(1190, 128)
}

TEST_CASE("The slot planner orders by birth, then size descending, then id, and prefix-sums aligned slot sizes",
          "[tmmu]") {
  // a,b,c born at 0 (sizes 100, 300, 300: b before c by id), d born at 2
  // after a ended: d takes a's slot (the lowest free one).
  IntervalSet s = one_arena(64);
  add(s, "a", 100, 0, 1);
  add(s, "b", 300, 0, 5);
  add(s, "c", 300, 0, 5);
  add(s, "d", 200, 2, 3);
  s.tensors[3].alignment = 256;
  sort_ids(s);
  PlanReport r = run_strategy(s, kModule, kSlot, {});
  // slots: b=0, c=1, a=2, d=2 (slot 2 freed by a, lowest free)
  CHECK(r.slots == std::vector<uint64_t>{2, 0, 1, 2});
  // slot sizes 300, 300, max(100, 200) = 200; slot 2 alignment 256.
  // offsets: 0, align_up(300, 64) = 320, align_up(620, 256) = 768.
  CHECK(r.offsets == std::vector<uint64_t>{768, 0, 320, 768});
  CHECK(r.arena_footprint[0] == 1024);  // align_up(968, 64)
}

TEST_CASE("Parameters are persistent: one slot each, sequential offsets", "[tmmu]") {
  IntervalSet s;
  s.source = "params";
  s.arenas = {{"parameters", 128, 0, true}};
  add(s, "w1", 1000, 0, 0);
  add(s, "w2", 10, 5, 5);
  add(s, "w3", 500, 9, 9);
  for (const std::string& strat : {kSlot, kByte}) {
    PlanReport r = run_strategy(s, kModule, strat, {});
    CHECK(r.offsets == std::vector<uint64_t>{0, 1024, 1152});
    CHECK(r.arena_footprint[0] == 1664);
  }
}

TEST_CASE("The byte planner never uses more bytes than the slot planner or greedy by size", "[tmmu]") {
  for (uint32_t seed = 11; seed <= 18; ++seed) {
    IntervalSet s = random_graph(seed, 300);
    PlanReport slot = run_strategy(s, kModule, kSlot, {});
    PlanReport bytes = run_strategy(s, kModule, kByte, {});
    for (size_t a = 0; a < s.arenas.size(); ++a) {
      INFO("seed " << seed << " arena " << s.arenas[a].name);
      CHECK(bytes.arena_footprint[a] <= slot.arena_footprint[a]);
      if (!s.arenas[a].persistent) CHECK(bytes.arena_footprint[a] <= greedy_by_size(s, static_cast<uint32_t>(a)));
      CHECK(bytes.arena_footprint[a] >= bytes.metrics[a].lower_bound);
    }
  }
}

TEST_CASE("The byte planner never uses more bytes than greedy by size, best fit or first fit, at every quality",
          "[tmmu]") {
  for (uint32_t seed = 21; seed <= 26; ++seed) {
    IntervalSet s = random_graph(seed, 400);
    for (const char* quality : {"fast", "default", "high"}) {
      PlanReport bytes = run_strategy(s, kModule, kByte, {std::string("quality=") + quality});
      for (size_t a = 0; a < s.arenas.size(); ++a) {
        if (s.arenas[a].persistent) continue;
        INFO("seed " << seed << " quality " << quality << " arena " << s.arenas[a].name);
        CHECK(bytes.arena_footprint[a] <= greedy_by_size(s, static_cast<uint32_t>(a), true));
        CHECK(bytes.arena_footprint[a] <= greedy_by_size(s, static_cast<uint32_t>(a), false));
      }
    }
    // The baselines are the passes this test re-implements.
    PlanReport bf = run_strategy(s, kModule, kByte, {"baseline=greedy_by_size"});
    PlanReport ff = run_strategy(s, kModule, kByte, {"baseline=greedy_by_size_first_fit"});
    for (size_t a = 0; a < s.arenas.size(); ++a) {
      if (s.arenas[a].persistent) continue;
      const uint64_t al = s.arenas[a].alignment;
      CHECK(bf.arena_footprint[a] == (greedy_by_size(s, static_cast<uint32_t>(a), true) + al - 1) / al * al);
      CHECK(ff.arena_footprint[a] == (greedy_by_size(s, static_cast<uint32_t>(a), false) + al - 1) / al * al);
    }
  }
  CHECK(failure_code([&] { run_strategy(random_graph(1, 10), kModule, kByte, {"baseline=greedy"}); }) ==
        UMLOS_INVALID_ARGUMENT);
}

TEST_CASE("On idealloc's Y_1 trace the byte planner is not above the first-fit greedy-by-size pass", "[tmmu][slow]") {
  // 62,185 tensors, 9,331 live at once: the portfolio's budget used to run
  // out before its first-fit member, leaving the plan at 1.0042 x LB while
  // first-fit greedy by size alone reaches 1.0036.
  IntervalSet s = read_intervals(kBench + "/idealloc/Y_1.csv");
  PlanReport plan = run_strategy(s, kModule, kByte, {});
  CHECK(plan.arena_footprint[0] <= 499031546849ull);  // first fit's footprint, measured
  PlanReport ff = run_strategy(s, kModule, kByte, {"baseline=greedy_by_size_first_fit"});
  INFO("plan " << plan.arena_footprint[0] << ", first fit " << ff.arena_footprint[0] << ", LB "
               << plan.metrics[0].lower_bound);
  CHECK(ff.arena_footprint[0] == 499031546849ull);
  CHECK(plan.arena_footprint[0] <= ff.arena_footprint[0]);
}

TEST_CASE("The byte planner reaches the lower bound 124 on the Pisarchyk-Lee example", "[tmmu]") {
  IntervalSet s = read_intervals(kBench + "/synthetic/pisarchyk_lee_fig_example.csv");
  PlanReport r = run_strategy(s, kModule, kByte, {});
  CHECK(r.metrics[0].lower_bound == 124);
  CHECK(r.arena_footprint[0] == 124);
  PlanReport slot = run_strategy(s, kModule, kSlot, {});
  CHECK(slot.arena_footprint[0] > 124);
}

TEST_CASE("Byte plans are identical on every run and thread", "[tmmu]") {
  IntervalSet s = read_intervals(kBench + "/minimalloc-challenging/A.1048576.csv");
  PlanReport ref = run_strategy(s, kModule, kByte, {});
  check_same_on_threads(s, ref);
}

TEST_CASE("The byte planner's portfolio beats greedy by size on MiniMalloc's tight instances F and G",
          "[tmmu][bench-data]") {
  // Greedy by size is 1.36 x LB on both (bench/tmmu/README.md);
  // the order portfolio and refinement must find the better plans.
  for (const char* f : {"F", "G"}) {
    IntervalSet s = read_intervals(kBench + "/minimalloc-challenging/" + std::string(f) + ".1048576.csv");
    PlanReport r = run_strategy(s, kModule, kByte, {});
    const uint64_t gbs = greedy_by_size(s, 0);
    INFO(f << ": " << r.arena_footprint[0] << " vs greedy by size " << gbs << ", LB " << r.metrics[0].lower_bound);
    CHECK(static_cast<double>(r.arena_footprint[0]) <= 1.21 * static_cast<double>(r.metrics[0].lower_bound));
    CHECK(r.arena_footprint[0] < gbs);
  }
}

TEST_CASE("Alias-group members share one storage and must_not_alias members are refused", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "x", 4096, 0, 3);
  add(s, "x_view", 1024, 2, 6);
  add(s, "y", 4096, 4, 8);
  s.tensors[0].alias_group = s.tensors[1].alias_group = 1;
  for (const std::string& strat : {kSlot, kByte}) {
    PlanReport r = run_strategy(s, kModule, strat, {});
    CHECK(r.offsets[0] == r.offsets[1]);
    CHECK(r.offsets[2] != r.offsets[0]);  // y overlaps the group's hull 0..6
  }
  s.tensors[1].flags |= UMLOS_PLAN_MUST_NOT_ALIAS;
  CHECK(failure_code([&] { run_strategy(s, kModule, kSlot, {}); }) == UMLOS_INVALID_IR_SHAPES);
}

TEST_CASE("In-place writes on tensors saved for backward are refused", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 64, 0, 2);
  s.tensors[0].flags = UMLOS_PLAN_IN_PLACE_WRITE | UMLOS_PLAN_SAVED_FOR_BACKWARD;
  const std::string msg = failure_message([&] { run_strategy(s, kModule, kByte, {}); });
  CHECK(msg.find("tensor #0 (id 'a')") != std::string::npos);
}

TEST_CASE("A capacity too small fails with ARENA_TOO_SMALL naming the arena", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 1000, 0, 2);
  add(s, "b", 1000, 1, 3);
  s.arenas[0].capacity = 1500;
  for (const std::string& strat : {kSlot, kByte}) {
    const std::string msg = failure_message([&] { run_strategy(s, kModule, strat, {}); });
    CHECK(msg.find("activations") != std::string::npos);
    CHECK(msg.find("1500") != std::string::npos);
    CHECK(failure_code([&] { run_strategy(s, kModule, strat, {}); }) == UMLOS_ARENA_TOO_SMALL);
  }
}

TEST_CASE("A memory budget breach fails with QUOTA_EXCEEDED and commits nothing", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 1000, 0, 2);
  add(s, "b", 1000, 1, 3);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"memory_bytes_budget=2000"}); }) == UMLOS_QUOTA_EXCEEDED);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"memory_bytes_budget=2048"}); }) == UMLOS_OK);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"nonsense=1"}); }) == UMLOS_INVALID_ARGUMENT);
}

TEST_CASE("uint64 overflow in offsets fails with ALLOCATION_OVERFLOW", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "a", UINT64_MAX - 100, 0, 2);
  add(s, "b", 1000, 1, 3);
  for (const std::string& strat : {kSlot, kByte})
    CHECK(failure_code([&] { run_strategy(s, kModule, strat, {}); }) == UMLOS_ALLOCATION_OVERFLOW);
}

TEST_CASE("The checker refuses overlapping, misaligned and uncovered plans", "[tmmu][checker]") {
  IntervalSet s = one_arena(64);
  add(s, "a", 100, 0, 2);
  add(s, "b", 100, 2, 4);
  add(s, "c", 100, 5, 6);
  PlanInput in;
  make_request(s, {}, in);
  std::vector<uint64_t> off{0, 128, 0}, slots(3, UMLOS_PLAN_NO_SLOT), fp{256};
  umlos_plan_result r{sizeof(umlos_plan_result), off.data(), slots.data(), fp.data(), 0};
  CHECK_NOTHROW(check_plan(in.request, r, {}));
  off[1] = 64;  // a [0,100) and b [64,164) both live at step 2
  CHECK(failure_code([&] { check_plan(in.request, r, {}); }) == UMLOS_ADDRESS_COLLISION);
  off[1] = 130;  // not a multiple of 64
  CHECK(failure_code([&] { check_plan(in.request, r, {}); }) == UMLOS_ALIGNMENT_VIOLATION);
  off[1] = 192;  // [192, 292) beyond the footprint 256
  CHECK(failure_code([&] { check_plan(in.request, r, {}); }) == UMLOS_ARENA_TOO_SMALL);
  off[1] = 128;
  slots = {0, 1, 2};  // 3 slots where max live is 2
  CheckOptions strict;
  strict.require_optimal_slots = true;
  CHECK(failure_code([&] { check_plan(in.request, r, strict); }) == UMLOS_INTERNAL);
  slots = {0, 1, 0};
  CHECK_NOTHROW(check_plan(in.request, r, strict));
  const std::string msg = failure_message([&] {
    off[1] = 64;
    check_plan(in.request, r, {}, {"a", "b", "c"});
  });
  CHECK(msg.find("'a'") != std::string::npos);
  CHECK(msg.find("'b'") != std::string::npos);
}

TEST_CASE("The checker's lower bound counts tensors that share a step", "[tmmu][checker]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 100, 0, 2);   // aligned 128
  add(s, "b", 200, 2, 4);   // aligned 256; shares step 2 with a
  add(s, "c", 1000, 5, 5);  // aligned 1024
  PlanInput in;
  make_request(s, {}, in);
  auto f = arena_facts(in.request);
  CHECK(f[0].lower_bound == 1024);
  CHECK(f[0].max_live == 2);
}

TEST_CASE("Interval JSON is read with ids sorted, defaults applied, saved_for_backward extended", "[tmmu][intervals]") {
  const std::string text = R"({"format": "umlos.intervals.v1", "name": "n", "alignment": 64, "mode": "backward",
    "tensors": [{"id": "t1", "arena": "activations", "size": 100, "begin": 0, "end": 3,
                 "saved_for_backward": true, "last_backward_use": 9},
                {"id": "t0", "arena": "parameters", "size": 8, "begin": 0, "end": 0},
                {"id": "t2", "size": 5, "begin": 1, "end": 1, "shape_envelope": {"max_size": 50}}]})";
  IntervalSet s = parse_intervals_json(text, "x.json");
  REQUIRE(s.tensors.size() == 3);
  CHECK(s.tensors[0].id == "t0");
  CHECK(s.arenas[s.tensors[0].arena].persistent);
  CHECK(s.tensors[1].end == 9);
  CHECK(s.tensors[2].size == 50);
  CHECK(s.arenas[1].alignment == 64);
}

TEST_CASE("Bad interval input is refused with the 0.K code and the tensor named", "[tmmu][intervals]") {
  auto doc = [](const std::string& tensor) {
    return R"({"format": "umlos.intervals.v1", "tensors": [{"id": "ok", "size": 1, "begin": 0, "end": 0}, )" + tensor +
           "]}";
  };
  struct Case {
    std::string tensor;
    umlos_status code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {R"({"id": "z", "size": 0, "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES, "'size' must be > 0"},
      {R"({"id": "n", "size": -5, "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES, "got -5"},
      {R"({"id": "e", "size": 5, "begin": 4, "end": 1})", UMLOS_LIVENESS_CYCLE, "end 1 < begin 4"},
      {R"({"id": "ok", "size": 5, "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES, "duplicate tensor id 'ok'"},
      {R"({"id": "u", "arena": "scratch", "size": 5, "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES,
       "unknown arena 'scratch'"},
      {R"({"id": "f", "size": 5.5, "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES, "must be an integer"},
      {R"({"id": "s", "size": "5", "begin": 0, "end": 1})", UMLOS_INVALID_IR_SHAPES, "must be an integer"},
      {R"({"id": "o", "size": 18446744073709551616, "begin": 0, "end": 1})", UMLOS_ALLOCATION_OVERFLOW,
       "does not fit in uint64"},
      {R"({"id": "a", "size": 5, "alignment": 48, "begin": 0, "end": 1})", UMLOS_ALIGNMENT_VIOLATION, "power of two"},
  };
  for (const Case& c : cases) {
    INFO(c.tensor);
    const std::string msg = failure_message([&] { parse_intervals_json(doc(c.tensor), "bad.json"); });
    CHECK(failure_code([&] { parse_intervals_json(doc(c.tensor), "bad.json"); }) == c.code);
    CHECK(msg.find(c.needle) != std::string::npos);
    CHECK(msg.find("bad.json") != std::string::npos);
  }
  CHECK(failure_code([&] { parse_intervals_json(R"({"format": "other", "tensors": []})", "f.json"); }) ==
        UMLOS_INVALID_ARGUMENT);
}

TEST_CASE("MiniMalloc CSV is read as half-open intervals", "[tmmu][intervals]") {
  IntervalSet s = parse_intervals_csv("id,lower,upper,size\n0,0,3,10\n1,3,5,20\n", "m.csv", 1);
  REQUIRE(s.tensors.size() == 2);
  CHECK(s.tensors[0].begin == 0);
  CHECK(s.tensors[0].end == 2);  // [0,3) -> 0..2: does not meet tensor 1 at step 3
  PlanReport r = run_strategy(s, kModule, kByte, {});
  CHECK(r.arena_footprint[0] == 20);
  CHECK(failure_code([&] { parse_intervals_csv("id,lower,upper,size\n0,3,3,10\n", "m.csv", 1); }) ==
        UMLOS_LIVENESS_CYCLE);
  CHECK(failure_code([&] { parse_intervals_csv("id,lower,upper,size\n0,0,3,x\n", "m.csv", 1); }) ==
        UMLOS_INVALID_IR_SHAPES);
  CHECK(failure_code([&] { parse_intervals_csv("a,b\n", "m.csv", 1); }) == UMLOS_INVALID_ARGUMENT);
}

TEST_CASE("The plan hash is stable and covers rank, world size and offsets", "[tmmu]") {
  IntervalSet s = random_graph(3, 50);
  PlanReport r = run_strategy(s, kModule, kSlot, {});
  const Digest h = plan_hash(s, r);
  CHECK(plan_hash(s, r) == h);
  IntervalSet s2 = s;
  s2.rank = 1;
  s2.world_size = 2;
  CHECK(plan_hash(s2, r) != h);
  PlanReport r2 = r;
  r2.offsets[0] += 128;
  CHECK(plan_hash(s, r2) != h);
}

TEST_CASE("A missing strategy name is NOT_FOUND naming the module", "[tmmu]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 1, 0, 0);
  const std::string msg = failure_message([&] { run_strategy(s, kModule, "UML_OS.TMMU.Nope_v1", {}); });
  CHECK(msg.find("libumlos_tmmu.so") != std::string::npos);
}

TEST_CASE("Gzip-compressed interval JSON is read like the plain file", "[tmmu][intervals]") {
  const std::string text = R"({"format": "umlos.intervals.v1", "alignment": 64,
    "tensors": [{"id": "a", "size": 100, "begin": 0, "end": 3}, {"id": "b", "size": 50, "begin": 2, "end": 5}]})";
  const std::string path = std::string(UMLOS_BINARY_DIR) + "/tmmu_gz_test.json.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(f);
  IntervalSet gz = read_intervals(path);
  IntervalSet plain = parse_intervals_json(text, "plain");
  REQUIRE(gz.tensors.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(gz.tensors[i].id == plain.tensors[i].id);
    CHECK(gz.tensors[i].size == plain.tensors[i].size);
    CHECK(gz.tensors[i].end == plain.tensors[i].end);
  }
  PlanReport r = run_strategy(gz, kModule, kByte, {});
  CHECK(r.arena_footprint[1] == 192);  // 128 + 64: a and b share steps 2..3
  // A truncated gzip stream is DATA_LOSS naming the file.
  std::vector<uint8_t> bytes = umlos::read_file(path);
  bytes.resize(bytes.size() / 2);
  const std::string cut = std::string(UMLOS_BINARY_DIR) + "/tmmu_gz_cut.json.gz";
  umlos::write_file_atomic(cut, bytes);
  CHECK(failure_code([&] { read_intervals(cut); }) == UMLOS_DATA_LOSS);
}

TEST_CASE("The checkpoint form is strict deterministic CBOR carrying the plan hash", "[tmmu]") {
  IntervalSet s = random_graph(5, 60);
  PlanReport r = run_strategy(s, kModule, kSlot, {});
  const std::vector<uint8_t> bytes = checkpoint_cbor(s, r);
  const umlos::cbor::Value v = umlos::cbor::decode(bytes);  // strict: throws on non-canonical input
  const Digest h = plan_hash(s, r);
  REQUIRE(v.find("plan_hash") != nullptr);
  CHECK(v.find("plan_hash")->as_bytes() == std::vector<uint8_t>(h.begin(), h.end()));
  CHECK(v.find("logical_slot_assignment")->as_array().size() == s.tensors.size());
  CHECK(checkpoint_cbor(s, r) == bytes);
}

TEST_CASE("Applied plans keep every live tensor's bytes intact through execution", "[tmmu][apply]") {
  // Executes the plan on host arenas: at each step, tensors born then are
  // filled with their own pattern; every live tensor must still hold its
  // pattern at every step of its interval (a collision would clobber it).
  for (const std::string& strat : {kSlot, kByte}) {
    IntervalSet s = random_graph(21, 250);
    for (auto& t : s.tensors) t.size = std::min<uint64_t>(t.size, 20000);  // keep the arenas small
    PlanReport r = run_strategy(s, kModule, strat, {});
    HostArenas h = apply_plan(s, r);
    for (size_t i = 0; i < s.tensors.size(); ++i)  // ZeroTensor_v1 ran on every tensor
      REQUIRE(std::all_of(h.data(i), h.data(i) + s.tensors[i].size, [](uint8_t b) { return b == 0; }));
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (const auto& t : s.tensors) {
      t0 = std::min(t0, t.begin);
      t1 = std::max(t1, t.end);
    }
    auto expected = [&](size_t i) {
      std::vector<uint8_t> v(s.tensors[i].size);
      HostArenas one;
      one.buffers.assign(1, std::vector<uint8_t>(v.size()));
      one.tensors.assign(1, {0, 0, v.size()});
      debug_fill_tensor(one, 0, 1000 + i, ExecutionMode::kStandard);
      return one.buffers[0];
    };
    std::vector<std::vector<uint8_t>> pattern(s.tensors.size());
    for (size_t i = 0; i < s.tensors.size(); ++i) pattern[i] = expected(i);
    size_t checked = 0;
    for (int64_t step = t0; step <= t1; ++step) {
      for (size_t i = 0; i < s.tensors.size(); ++i)
        if (s.tensors[i].begin == step && !s.arenas[s.tensors[i].arena].persistent)
          debug_fill_tensor(h, i, 1000 + i, ExecutionMode::kStandard);
        else if (step == t0 && s.arenas[s.tensors[i].arena].persistent)
          debug_fill_tensor(h, i, 1000 + i, ExecutionMode::kStandard);
      for (size_t i = 0; i < s.tensors.size(); ++i) {
        const bool live =
            s.arenas[s.tensors[i].arena].persistent || (s.tensors[i].begin <= step && step <= s.tensors[i].end);
        if (!live) continue;
        INFO(strat << ": tensor " << s.tensors[i].id << " at step " << step);
        REQUIRE(std::memcmp(h.data(i), pattern[i].data(), pattern[i].size()) == 0);
        ++checked;
      }
    }
    CHECK(checked > s.tensors.size());
  }
}

TEST_CASE("DebugFillTensor_v1 is refused in confidential and regulated modes, ZeroTensor_v1 writes zeros",
          "[tmmu][apply]") {
  IntervalSet s = one_arena(64);
  add(s, "a", 100, 0, 1);
  PlanReport r = run_strategy(s, kModule, kByte, {});
  HostArenas h = apply_plan(s, r);
  debug_fill_tensor(h, 0, 7, ExecutionMode::kStandard);
  CHECK(h.data(0)[0] != 0);
  for (ExecutionMode m : {ExecutionMode::kConfidential, ExecutionMode::kRegulated}) {
    const std::vector<uint8_t> before(h.data(0), h.data(0) + 100);
    CHECK(failure_code([&] { debug_fill_tensor(h, 0, 8, m); }) == UMLOS_PERMISSION_DENIED);
    CHECK(std::vector<uint8_t>(h.data(0), h.data(0) + 100) == before);
  }
  zero_tensor(h, 0);
  for (int b = 0; b < 100; ++b) CHECK(h.data(0)[b] == 0);
  PlanReport bad = r;
  bad.offsets[0] = 64;  // [64, 164) beyond the 128-byte arena
  CHECK(failure_code([&] { apply_plan(s, bad); }) == UMLOS_ADDRESS_COLLISION);
}

namespace {

// A perfect tiling of a width x steps rectangle by recursive guillotine cuts
// (offset cuts and time cuts): every step's live bytes sum to `width`, so
// LB = width and the tiling itself is a plan of exactly LB bytes; greedy
// orders rarely find one, a complete search must.
void tile(std::mt19937_64& rng, uint64_t off, uint64_t w, int64_t t0, int64_t t1, int depth,
          std::vector<std::array<int64_t, 4>>& out) {
  const bool leaf = depth == 0 || (w < 8 && t1 - t0 < 2);
  if (!leaf && (rng() % 2 == 0 || t1 - t0 < 2) && w >= 8) {
    const uint64_t cut = 1 + rng() % (w - 1);
    tile(rng, off, cut, t0, t1, depth - 1, out);
    tile(rng, off + cut, w - cut, t0, t1, depth - 1, out);
  } else if (!leaf && t1 - t0 >= 2) {
    const int64_t cut = t0 + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(t1 - t0 - 1));
    tile(rng, off, w, t0, cut, depth - 1, out);
    tile(rng, off, w, cut, t1, depth - 1, out);
  } else {
    out.push_back({static_cast<int64_t>(off), static_cast<int64_t>(w), t0, t1 - 1});
  }
}

#ifndef TILING_DEPTH
#define TILING_DEPTH 6
#endif
IntervalSet perfect_tiling(uint32_t seed, uint64_t width, int depth) {
  std::mt19937_64 rng(seed);
  std::vector<std::array<int64_t, 4>> blocks;
  tile(rng, 0, width, 0, 64, depth, blocks);
  IntervalSet s = one_arena(1);
  s.source = "tiling" + std::to_string(seed);
  for (size_t i = 0; i < blocks.size(); ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "b%04zu", i);
    add(s, id, static_cast<uint64_t>(blocks[i][1]), blocks[i][2], blocks[i][3]);
  }
  sort_ids(s);
  return s;
}

}  // namespace

TEST_CASE("quality=exact packs random perfect tilings into exactly their lower bound", "[tmmu][exact]") {
  int greedy_above = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    IntervalSet s = perfect_tiling(seed, 4096, TILING_DEPTH);
    INFO("seed " << seed << ", " << s.tensors.size() << " tensors");
    PlanReport exact = run_strategy(s, kModule, kByte, {"quality=exact"});  // checked by the checker
    CHECK(exact.metrics[0].lower_bound == 4096);
    CHECK(exact.arena_footprint[0] == 4096);
    if (greedy_by_size(s, 0) > 4096) ++greedy_above;
  }
  CHECK(greedy_above >= 6);  // the instances are not easy for greedy
}

TEST_CASE("quality=exact fits MiniMalloc's challenging instances I and K into their 1 MiB capacity",
          "[tmmu][exact][bench-data]") {
  for (const char* f : {"I", "K"}) {
    IntervalSet s = read_intervals(kBench + "/minimalloc-challenging/" + std::string(f) + ".1048576.csv");
    const uint64_t gbs = greedy_by_size(s, 0);
    s.arenas[0].capacity = 1048576;  // the search's target; above it the plan fails (ARENA_TOO_SMALL)
    PlanReport r = run_strategy(s, kModule, kByte, {"quality=exact"});
    INFO(f << ": " << r.arena_footprint[0] << ", greedy by size " << gbs);
    CHECK(r.arena_footprint[0] <= 1048576);
    CHECK(gbs > 1048576 * 13 / 10);
  }
}

TEST_CASE("The default byte plan of every MiniMalloc challenging instance is within 1.15 x LB", "[tmmu][bench-data]") {
  for (const char* f : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"}) {
    IntervalSet s = read_intervals(kBench + "/minimalloc-challenging/" + std::string(f) + ".1048576.csv");
    PlanReport r = run_strategy(s, kModule, kByte, {});
    INFO(f << ": " << r.arena_footprint[0] << " vs LB " << r.metrics[0].lower_bound);
    CHECK(r.arena_footprint[0] * 100 <= r.metrics[0].lower_bound * 115);
  }
}

TEST_CASE("The exact search gives identical offsets on every run and thread", "[tmmu][exact]") {
  IntervalSet s = perfect_tiling(5, 4096, TILING_DEPTH);
  const std::vector<std::string> opts = {"quality=exact"};
  PlanReport ref = run_strategy(s, kModule, kByte, opts);
  check_same_on_threads(s, ref, opts);
}

TEST_CASE("Any node budget gives a checked plan and a large one reaches the lower bound", "[tmmu][exact]") {
  IntervalSet s = perfect_tiling(9, 4096, TILING_DEPTH);
  for (const char* nodes : {"search_nodes=1", "search_nodes=100", "search_nodes=100000"}) {
    PlanReport r = run_strategy(s, kModule, kByte, {"quality=exact", nodes});  // checked by the checker
    PlanReport again = run_strategy(s, kModule, kByte, {"quality=exact", nodes});
    INFO(nodes);
    CHECK(r.arena_footprint[0] >= 4096);
    CHECK(r.offsets == again.offsets);
    CHECK(r.work_units == again.work_units);
    if (std::string(nodes) == "search_nodes=100000") CHECK(r.arena_footprint[0] == 4096);
  }
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"quality=4"}); }) == UMLOS_INVALID_ARGUMENT);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"search_nodes=-1"}); }) == UMLOS_INVALID_ARGUMENT);
}

TEST_CASE("quality=exact plans of random aligned graphs pass the checker and never exceed greedy by size",
          "[tmmu][exact]") {
  for (uint32_t seed = 21; seed <= 26; ++seed) {
    IntervalSet s = random_graph(seed, 250);
    PlanReport e = run_strategy(s, kModule, kByte, {"quality=exact"});  // checked by the checker
    for (size_t a = 0; a < s.arenas.size(); ++a) {
      INFO("seed " << seed << " arena " << s.arenas[a].name);
      if (!s.arenas[a].persistent) CHECK(e.arena_footprint[a] <= greedy_by_size(s, static_cast<uint32_t>(a)));
      CHECK(e.arena_footprint[a] >= e.metrics[a].lower_bound);
      for (size_t t = 0; t < s.tensors.size(); ++t)
        if (s.tensors[t].arena == a) CHECK(e.offsets[t] % s.arenas[a].alignment == 0);
    }
  }
}

namespace {

// Overlapping training micro-batches: each is a stack of K saved activations
// (LIFO: the k-th lives from step b + k to its backward at b + 2K - 1 - k)
// of a few size classes, and the next one starts K/6 + U[0, K/6] steps later,
// so several stacks grow and shrink at once (like the activations arena of
// the periodic mixed workload of bench/tmmu, where best fit scatters them).
// With `period` > 0, micro-batch m repeats the shape and the start gap of
// micro-batch m mod `period` (a training step of fixed shapes run again and
// again): the component repeats with a period of sum-of-gaps steps, which
// the byte planner's periodic plan detects.
IntervalSet micro_batches(uint32_t seed, size_t n, uint32_t period = 0) {
  std::mt19937_64 rng(seed);
  IntervalSet s = one_arena(128);
  s.source = (period ? "periodic_micro_batches" : "micro_batches") + std::to_string(seed);
  int64_t base = 0;
  for (uint32_t m = 0; s.tensors.size() < n; ++m) {
    if (period != 0) rng.seed(seed * 1000003ull + m % period);
    const int64_t K = 40 + static_cast<int64_t>(rng() % 40);
    const uint64_t scale = 1 + rng() % 8;
    for (int64_t k = 0; k < K; ++k) {
      char id[16];
      std::snprintf(id, sizeof id, "t%05zu", s.tensors.size());
      add(s, id, 4096 * scale * (1 + rng() % 4), base + k, base + 2 * K - 1 - k);
    }
    base += K / 6 + static_cast<int64_t>(rng() % static_cast<uint64_t>(K / 6 + 1));
  }
  sort_ids(s);
  return s;
}

}  // namespace

TEST_CASE(
    "On thousands of overlapping LIFO micro-batches the skyline passes come within 1 % of LB, identically on every run "
    "and thread",
    "[tmmu][skyline]") {
  // Greedy by size and the whole portfolio and refinement stay 3.5 % above
  // LB here (15,671,296 bytes); the skyline passes reach 0.3 %.
  IntervalSet s = micro_batches(7, 3000);
  const PlanReport ref = run_strategy(s, kModule, kByte, {});
  const uint64_t lb = ref.metrics[0].lower_bound;
  const uint64_t gbs = greedy_by_size(s, 0);
  INFO("LB " << lb << ", greedy by size " << gbs << ", byte planner " << ref.arena_footprint[0]);
  CHECK(static_cast<double>(gbs) > 1.03 * static_cast<double>(lb));
  CHECK(static_cast<double>(ref.arena_footprint[0]) <= 1.01 * static_cast<double>(lb));
  check_same_on_threads(s, ref);
}

TEST_CASE(
    "On periodic overlapping micro-batches the periodic plan beats the skyline passes, identically on every run and "
    "thread",
    "[tmmu][periodic][slow]") {
  // LB 13,340,672 bytes: before the periodic plan 1.0903 x LB (the skyline
  // passes), with it 1.0163.
  IntervalSet s = micro_batches(3, 6000, 4);
  const PlanReport ref = run_strategy(s, kModule, kByte, {});  // checked by the kernel checker
  const uint64_t lb = ref.metrics[0].lower_bound;
  INFO("LB " << lb << ", byte planner " << ref.arena_footprint[0]);
  CHECK(static_cast<double>(ref.arena_footprint[0]) <= 1.03 * static_cast<double>(lb));
  CHECK(ref.arena_footprint[0] <= greedy_by_size(s, 0));
  check_same_on_threads(s, ref);
}

TEST_CASE("Periodic plans stay valid when the repetition is broken or incomplete", "[tmmu][periodic][slow]") {
  // Tensors removed late in the schedule (the rest is still a subset of the
  // repetition: periodic plan), a tensor's size or interval changed in the
  // middle (no longer repeats: no periodic plan), a duplicate of a tensor of
  // the middle cycle (the cycle the representatives come from: periodic
  // plan), larger alignments on some shapes (periodic plan): every plan
  // passes the checker (run_strategy checks it) and never exceeds greedy by
  // size. Figures before the pilot method (now on by default, which lowers
  // the periodic ones): footprint / LB unmodified 1.0192, variants 1.0192, 1.0843, 1.0522,
  // 1.0244, 1.0202 (before the hill climbing on the cycle 1.0309; 1.0309,
  // 1.0843, 1.0522, 1.0267, 1.0234; before the periodic plan 1.0522;
  // 1.0515, 1.0843, 1.0522, 1.0610, 1.0511).
  const IntervalSet base = micro_batches(5, 4000, 3);
  for (int variant = 0; variant < 5; ++variant) {
    IntervalSet s = base;
    const size_t mid = s.tensors.size() / 2;
    if (variant == 0) {
      // tensors of one micro-batch late in the schedule (ids follow birth order)
      const auto late = s.tensors.begin() + static_cast<std::ptrdiff_t>(s.tensors.size() * 9 / 10);
      s.tensors.erase(late, late + 25);
    }
    if (variant == 1) s.tensors[mid].size = s.tensors[mid].actual_size = s.tensors[mid].size + 4096;
    if (variant == 2) s.tensors[mid].end += 1;
    if (variant == 3) {
      TensorSpec t = s.tensors[mid];
      t.id = "zz_duplicate";
      s.tensors.push_back(t);
    }
    if (variant == 4)
      for (TensorSpec& t : s.tensors)
        if (t.size % 8192 == 0) t.alignment = 8192;
    INFO("variant " << variant);
    PlanReport r;
    REQUIRE_NOTHROW(r = run_strategy(s, kModule, kByte, {}));
    CHECK(r.arena_footprint[0] <= greedy_by_size(s, 0));
    CHECK(r.arena_footprint[0] >= r.metrics[0].lower_bound);
    if (variant != 1 && variant != 2)  // still periodic: near the unmodified plan's 1.0192
      CHECK(static_cast<double>(r.arena_footprint[0]) <= 1.045 * static_cast<double>(r.metrics[0].lower_bound));
  }
}

TEST_CASE("The hill climbing on the cycle's skyline rank lowers periodic plans, identically on every run and thread",
          "[tmmu][periodic][slow]") {
  // After the skyline passes on the circle, the best cycle's rank is hill
  // climbed (swaps among the last quarter of the placement order, the pass
  // rerun from the first step they change) within 8 passes' worth of work
  // units. Footprints before it (periodic plan, skyline passes only):
  // 23,789,568 bytes (1.0309 x LB) and 10,784,768 (1.0186); with it
  // 23,519,232 (1.0192) and 10,657,792 (1.0066).
  const struct {
    uint32_t seed, period;
    uint64_t climbed, before;
  } cases[] = {{5, 3, 23519232, 23789568}, {8, 4, 10657792, 10784768}};
  for (const auto& k : cases) {
    IntervalSet s = micro_batches(k.seed, 4000, k.period);
    const std::vector<std::string> opts = {"pilot=off"};           // the climbing alone (the pilot: the next test)
    const PlanReport ref = run_strategy(s, kModule, kByte, opts);  // checked by the kernel checker
    INFO("seed " << k.seed << " period " << k.period << ": LB " << ref.metrics[0].lower_bound << ", byte planner "
                 << ref.arena_footprint[0] << " (before the climbing " << k.before << ")");
    CHECK(ref.arena_footprint[0] <= k.climbed);
    CHECK(ref.arena_footprint[0] <= greedy_by_size(s, 0));
    check_same_on_threads(s, ref, opts);
  }
}

TEST_CASE(
    "The pilot method on the best cycle lowers periodic plans, to the lower bound on one, identically on every run and "
    "thread",
    "[tmmu][periodic][slow]") {
  // On by default (`pilot=on`: rank TW, K = 7): on the cycle the periodic
  // plan ends on, every step tries the K lowest representatives, completes
  // each by the skyline pass and commits the best, so the plan is never
  // above the cycle's skyline passes and hill climbing (`pilot=off`).
  // `pilot=portfolio` (quality=high and exact) adds rank TWA and K = 5.
  // Footprints with pilot=off 23,519,232 and 10,657,792 bytes (1.0192 and
  // 1.0066 x LB); with the pilot 23,363,584 (1.0124) and 10,588,160 (the
  // LB); the portfolio's other runs 23,379,968-23,420,928 and
  // 10,588,160-10,592,256.
  const struct {
    uint32_t seed, period;
    uint64_t with_pilot;
  } cases[] = {{5, 3, 23363584}, {8, 4, 10588160}};
  for (const auto& k : cases) {
    IntervalSet s = micro_batches(k.seed, 4000, k.period);
    const PlanReport off = run_strategy(s, kModule, kByte, {"pilot=off"});
    const PlanReport ref = run_strategy(s, kModule, kByte, {});  // checked by the kernel checker
    const PlanReport port = run_strategy(s, kModule, kByte, {"pilot=portfolio"});
    INFO("seed " << k.seed << " period " << k.period << ": LB " << ref.metrics[0].lower_bound << ", pilot=off "
                 << off.arena_footprint[0] << ", pilot " << ref.arena_footprint[0] << ", portfolio "
                 << port.arena_footprint[0]);
    CHECK(ref.arena_footprint[0] < off.arena_footprint[0]);
    CHECK(ref.arena_footprint[0] <= k.with_pilot);
    CHECK(ref.arena_footprint[0] >= ref.metrics[0].lower_bound);
    CHECK(port.arena_footprint[0] <= ref.arena_footprint[0]);
    if (k.seed == 8) check_same_on_threads(s, ref);
  }
}

TEST_CASE(
    "A pilot stopped by its work budget keeps its committed prefix and best completion: never above the skyline cycle",
    "[tmmu][periodic]") {
  // pilot_budget=N stops trying candidates after N work units; the plan is
  // then the committed prefix plus the incumbent's completion, which is
  // never above the first rollout (the plain skyline pass with rank TW)
  // and only replaces the climbed cycle when lower. Budgets: 1 unit (the
  // first rollout only), half of the full run's units, and unbounded:
  // 10,616,832 / 10,596,352 / 10,588,160 bytes (pilot=off 10,657,792).
  IntervalSet s = micro_batches(8, 4000, 4);
  const PlanReport off = run_strategy(s, kModule, kByte, {"pilot=off"});
  const PlanReport full = run_strategy(s, kModule, kByte, {});
  REQUIRE(full.work_units > off.work_units);
  const uint64_t half = (full.work_units - off.work_units) / 2;
  const PlanReport tiny = run_strategy(s, kModule, kByte, {"pilot_budget=1"});  // each checked by the kernel checker
  const PlanReport mid = run_strategy(s, kModule, kByte, {"pilot_budget=" + std::to_string(half)});
  INFO("pilot=off " << off.arena_footprint[0] << ", budget 1 " << tiny.arena_footprint[0] << ", budget " << half << " "
                    << mid.arena_footprint[0] << ", full " << full.arena_footprint[0]);
  CHECK(tiny.arena_footprint[0] <= off.arena_footprint[0]);
  CHECK(mid.arena_footprint[0] <= tiny.arena_footprint[0]);
  CHECK(full.arena_footprint[0] <= mid.arena_footprint[0]);
  CHECK(tiny.work_units < mid.work_units);
  CHECK(mid.work_units < full.work_units);
  check_same_on_threads(s, mid, {"pilot_budget=" + std::to_string(half)});
}

TEST_CASE("The pilot option takes off, on or portfolio and names the expected values otherwise", "[tmmu][periodic]") {
  IntervalSet s = one_arena(128);
  add(s, "a", 1000, 0, 2);
  add(s, "b", 1000, 1, 3);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"pilot=on"}); }) == UMLOS_OK);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"pilot=off", "quality=high"}); }) == UMLOS_OK);
  CHECK(failure_code([&] { run_strategy(s, kModule, kByte, {"pilot=portfolio"}); }) == UMLOS_OK);
  std::string msg;
  try {
    run_strategy(s, kModule, kByte, {"pilot=maybe"});
  } catch (const Failure& f) {
    msg = f.what();
    CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
  }
  CHECK(msg.find("option 'pilot': expected \"off\", \"on\" or \"portfolio\"") != std::string::npos);
}

TEST_CASE("The streaming interval reader reads what a whole-document parse reads, in any key order", "[tmmu]") {
  // Tensors before the arenas that name them; a nested "tensors" key inside
  // an arena is an ordinary key; a repeated top-level "tensors" key keeps
  // its last value, as json::parse does.
  const std::string text =
      R"({"tensors": [{"id": "old", "arena": "a", "size": 1, "begin": 0, "end": 0}],
          "format": "umlos.intervals.v1",
          "tensors": [{"id": "y", "arena": "b", "size": 100, "begin": 2, "end": 5, "alias_group": "g"},
                      {"id": "x", "arena": "a", "size": 64, "begin": 0, "end": 3, "shape_envelope": {"max_size": 96}}],
          "arenas": [{"name": "a", "alignment": 64, "tensors": [1, {"id": "no"}]}, {"name": "b", "persistent": true}],
          "alignment": 32})";
  IntervalSet s = parse_intervals_json(text, "order.json");
  REQUIRE(s.tensors.size() == 2);
  CHECK(s.tensors[0].id == "x");
  CHECK(s.tensors[0].size == 96);
  CHECK(s.tensors[0].actual_size == 64);
  CHECK(s.tensors[0].arena == 0);
  CHECK(s.tensors[1].id == "y");
  CHECK(s.tensors[1].arena == 1);
  CHECK(s.tensors[1].alias_group == 1);
  REQUIRE(s.arenas.size() == 2);
  CHECK(s.arenas[0].alignment == 64);
  CHECK(s.arenas[1].alignment == 32);
  CHECK(s.arenas[1].persistent);
  // Errors keep their codes and messages.
  const std::string bad_json = R"({"format": "umlos.intervals.v1", "tensors": [{"id": "a", "size": 1,)";
  CHECK(failure_code([&] { parse_intervals_json(bad_json, "cut.json"); }) == UMLOS_INVALID_ARGUMENT);
  CHECK(failure_message([&] { parse_intervals_json(bad_json, "cut.json"); }).find("cut.json: not valid JSON") !=
        std::string::npos);
  CHECK(failure_message([&] {
          parse_intervals_json(R"({"format": "umlos.intervals.v1", "tensors": [1], "tensors": {}})", "t.json");
        }).find("'tensors' must be an array") != std::string::npos);
  CHECK(failure_message([&] {
          parse_intervals_json(R"({"format": "umlos.intervals.v1", "tensors": [{"id": "a"}, 7]})", "t.json");
        }).find("tensors[0] (id 'a'): missing key 'size'") != std::string::npos);
  CHECK(failure_message([&] {
          parse_intervals_json(R"({"format": "umlos.intervals.v1", "tensors": [7]})", "t.json");
        }).find("tensors[0]: must be an object") != std::string::npos);
}
