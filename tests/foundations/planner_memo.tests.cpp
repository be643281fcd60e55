// planner_memo.tests.cpp — the kernel's Planner answers a request identical
// to a recent one with the plan it already checked, and only then.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "error.hpp"
#include "host.hpp"
#include "planner.hpp"

namespace {

int g_calls = 0;
bool g_overlap = false;  // plan every tensor at offset 0: the checker refuses it

// Tensors one after the other in their arena, each at a multiple of 128.
umlos_status sequential_plan(const umlos_services*, umlos_ctx*, const umlos_plan_request* req, umlos_plan_result* res) {
  ++g_calls;
  std::vector<uint64_t> end(req->n_arenas, 0);
  for (uint64_t i = 0; i < req->n_tensors; ++i) {
    const umlos_plan_tensor& t = req->tensors[i];
    res->offsets[i] = g_overlap ? 0 : end[t.arena];
    res->slots[i] = UMLOS_PLAN_NO_SLOT;
    end[t.arena] += (t.size + 127) / 128 * 128;
  }
  for (uint32_t a = 0; a < req->n_arenas; ++a) res->arena_footprint[a] = end[a];
  res->work_units = req->n_tensors;
  return UMLOS_OK;
}

const umlos_tmmu_strategy_desc kStrategy = {sizeof(umlos_tmmu_strategy_desc), "test.SequentialPlanner", nullptr,
                                            sequential_plan};

// A planner whose active strategy is kStrategy, with the call count reset.
struct PlannerFixture {
  umlos::Host host;
  umlos::Planner planner{host};
  explicit PlannerFixture(bool overlap) {
    planner.set_active(&kStrategy);
    g_calls = 0;
    g_overlap = overlap;
  }
  ~PlannerFixture() { g_overlap = false; }
};

struct Request {
  std::vector<umlos_plan_tensor> tensors;
  std::vector<umlos_plan_arena> arenas;
  std::vector<umlos_attr> options;
  umlos_plan_request view() const {
    umlos_plan_request r{};
    r.struct_size = sizeof r;
    r.tensors = tensors.data();
    r.n_tensors = tensors.size();
    r.arenas = arenas.data();
    r.n_arenas = static_cast<uint32_t>(arenas.size());
    r.options = options.data();
    r.n_options = static_cast<uint32_t>(options.size());
    return r;
  }
};

Request three_tensors() {
  Request q;
  q.arenas.push_back({"activations", 128, 0, 0, 0});
  q.tensors.push_back({1000, 0, 0, 1, 0, 0, 0});
  q.tensors.push_back({500, 0, 1, 2, 0, 0, 0});
  q.tensors.push_back({64, 0, 0, 2, 0, 0, 0});
  return q;
}

struct Plan {
  std::vector<uint64_t> offsets, slots, footprints;
  umlos_plan_result result;
  explicit Plan(const Request& q) : offsets(q.tensors.size()), slots(q.tensors.size()), footprints(q.arenas.size()) {
    result = umlos_plan_result{sizeof(umlos_plan_result), offsets.data(), slots.data(), footprints.data(), 0};
  }
};

}  // namespace

TEST_CASE("The planner reuses the checked plan of an identical request and replans any other", "[tmmu][planner]") {
  PlannerFixture f(false);
  umlos::Planner& planner = f.planner;

  Request q = three_tensors();
  Plan first(q), second(q);
  planner.plan_checked(q.view(), first.result, false);
  planner.plan_checked(q.view(), second.result, false);
  CHECK(g_calls == 1);
  CHECK(second.offsets == first.offsets);
  CHECK(second.footprints == first.footprints);
  CHECK(second.result.work_units == 3);

  SECTION("a tensor of another size is a new request") {
    q.tensors[1].size = 501;
    Plan p(q);
    planner.plan_checked(q.view(), p.result, false);
    CHECK(g_calls == 2);
  }
  SECTION("an option with other text is a new request, even at the same address") {
    static char text[8] = "fast";
    q.options.push_back({"quality", UMLOS_ATTR_STRING, 0, 0, 0.0, text});
    Plan a(q);
    planner.plan_checked(q.view(), a.result, false);
    std::strcpy(text, "best");
    Plan b(q);
    planner.plan_checked(q.view(), b.result, false);
    CHECK(g_calls == 3);
  }
}

TEST_CASE("A plan the kernel's checker refuses is never remembered", "[tmmu][planner]") {
  PlannerFixture f(true);  // live tensors 0 and 1 overlap at offset 0
  Request q = three_tensors();
  for (int i = 0; i < 2; ++i) {
    Plan p(q);
    CHECK_THROWS_AS(f.planner.plan_checked(q.view(), p.result, false), umlos::Failure);
  }
  CHECK(g_calls == 2);
}
