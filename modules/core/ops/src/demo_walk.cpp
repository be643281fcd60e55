// demo_walk.cpp — a deterministic random walk that drives every step of the
// spec 004 VI procedure without any model: it draws from the RNG streams as
// declared, keeps persistent state, reports a loss, lets a policy choose
// between optimize and probe, and is fingerprinted each iteration. It is the
// smallest complete manifest (manifests/demo_walk.yaml) and the fixture of
// the kernel's runner tests; the spec 004 operators replace it role by role.
//
// Values (docs/contracts.md): walk.position f64[dim] (persistent),
// loss_total, grad_norm, sil_mean (f64 scalars), action (i64 scalar).
#include <cmath>
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

// Ascending-index binary64 sum (spec 004 0.C: fixed reduction order).
double sum_squares(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return s;
}

void walk_step(sdk::Context& c) {
  const int64_t dim = c.config<int64_t>("walk.dim", 8);
  const double sigma = c.config<double>("walk.sigma", 0.1);
  if (dim <= 0) throw sdk::Error(UMLOS_INVALID_ARGUMENT, sdk::cat("config walk.dim must be positive, got ", dim));
  // The kernel's tensor first: it checks the run's memory budget before
  // this module allocates `dim` doubles of its own.
  umlos_tensor* noise = c.temp(UMLOS_DTYPE_F64, {dim});
  std::vector<double> position(static_cast<size_t>(dim), 0.0);
  if (const umlos_tensor* old = c.optional_input("walk.position")) {
    position = c.read<double>(old);
    if (position.size() != static_cast<size_t>(dim)) {
      throw sdk::Error(UMLOS_SHAPE_MISMATCH,
                       sdk::cat("walk.position has ", position.size(), " elements but config walk.dim is ", dim));
    }
  }
  // One draw of `dim` normals, produced on the driver's device.
  c.draw(UMLOS_STREAM_MISC, UMLOS_DIST_NORMAL_F64, noise);
  std::vector<double> n = c.read<double>(noise);
  for (size_t i = 0; i < position.size(); ++i) position[i] += sigma * n[i];
  c.write(c.output("walk.position", UMLOS_DTYPE_F64, {dim}), position);
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{sum_squares(position) / double(dim)});
}

void shrink_update(sdk::Context& c) {
  const double lr = c.config<double>("walk.lr", 0.1);
  umlos_tensor* pos = c.inout("walk.position");
  std::vector<double> p = c.read<double>(pos);
  std::vector<double> step(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    step[i] = lr * p[i];
    p[i] -= step[i];
  }
  c.write(pos, p);
  c.write(c.output("grad_norm", UMLOS_DTYPE_F64, {}), std::vector<double>{std::sqrt(sum_squares(step))});
}

void every_nth_probe(sdk::Context& c) {
  const int64_t every = c.config<int64_t>("walk.probe_every", 10);
  const int64_t t = c.iteration();
  const int64_t action = (every > 0 && t % every == 0) ? 1 : 0;  // 1 = probe (spec 004 0.D order)
  c.write(c.output("action", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{action});
}

// Mirrors the RNG contract of Cluster.SphericalKMeans_v1 (exactly 31 draws
// from `cluster`): sil_mean is the mean cosine between the position and 31
// random directions.
void spread_probe(sdk::Context& c) {
  std::vector<double> p = c.read<double>(c.input("walk.position"));
  const double pn = std::sqrt(sum_squares(p));
  double acc = 0.0;
  for (int k = 0; k < 31; ++k) {
    std::vector<double> u = c.draw_host<double>(UMLOS_STREAM_CLUSTER, UMLOS_DIST_NORMAL_F64, p.size());
    double dot = 0.0;
    for (size_t i = 0; i < p.size(); ++i) dot += p[i] * u[i];
    const double un = std::sqrt(sum_squares(u));
    acc += (pn > 0.0 && un > 0.0) ? dot / (pn * un) : 0.0;
  }
  c.write(c.output("sil_mean", UMLOS_DTYPE_F64, {}), std::vector<double>{acc / 31.0});
}

// Invariant (spec 004 I.E style), run by the kernel after every action:
// the walk stays inside a ball of radius walk.max_norm. The counterexample
// is the step and the offending norm.
void position_bounded(sdk::Context& c) {
  const double bound = c.config<double>("walk.max_norm", 1e6);
  const umlos_tensor* pos = c.optional_input("walk.position");
  if (!pos) return;
  const double norm = std::sqrt(sum_squares(c.read<double>(pos)));
  if (!(norm <= bound)) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "t=", c.iteration(), ": |walk.position| = ", norm,
                     " exceeds walk.max_norm = ", bound);
  }
}

sdk::Module describe() {
  return sdk::Module("umlos_core", "0.1.0")
      .add(sdk::Operator("UML_OS.Demo.RandomWalkStep_v1")
               .summary("position += sigma * N(0,1) (one draw from misc); loss_total = mean(position^2)")
               .stateful()
               .draws(UMLOS_STREAM_MISC, 1)
               .optional_input("walk.position", UMLOS_DTYPE_F64)
               .output("walk.position", UMLOS_DTYPE_F64, sdk::Dims{UMLOS_DIM_ANY}, UMLOS_VALUE_PERSISTENT)
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(walk_step)
               .test(sdk::TestVector("sigma 0 keeps the position")
                         .config("walk.dim", int64_t{2})
                         .config("walk.sigma", 0.0)
                         .input<double>("walk.position", {2}, {1.0, -3.0})
                         .expect<double>("walk.position", {2}, {1.0, -3.0})
                         .expect<double>("loss_total", {}, {5.0})))
      .add(sdk::Operator("UML_OS.Demo.ShrinkUpdate_v1")
               .summary("optimize: position -= lr * position; grad_norm = |lr * position|")
               .stateful()
               .inout("walk.position", UMLOS_DTYPE_F64, sdk::Dims{UMLOS_DIM_ANY})
               .output("grad_norm", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(shrink_update)
               .test(sdk::TestVector("lr 0.5 halves")
                         .config("walk.lr", 0.5)
                         .input<double>("walk.position", {2}, {4.0, -8.0})
                         .expect<double>("walk.position", {2}, {2.0, -4.0})
                         .expect<double>("grad_norm", {}, {std::sqrt(20.0)})))
      .add(sdk::Operator("UML_OS.Demo.EveryNthProbePolicy_v1")
               .summary("action = probe when t mod walk.probe_every == 0, else optimize")
               .pure()
               .output("action", UMLOS_DTYPE_I64, sdk::Dims{})
               .run(every_nth_probe)
               .test(sdk::TestVector("t = 0 probes")
                         .config("walk.probe_every", int64_t{5})
                         .expect<int64_t>("action", {}, {1})))
      .add(sdk::Operator("UML_OS.Demo.SpreadProbe_v1")
               .summary("probe: sil_mean = mean cosine to 31 random directions (31 draws from cluster)")
               .stateful()
               .draws(UMLOS_STREAM_CLUSTER, 31)
               .input("walk.position", UMLOS_DTYPE_F64, sdk::Dims{UMLOS_DIM_ANY})
               .output("sil_mean", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(spread_probe)
               .test(sdk::TestVector("zero position gives zero")
                         .input<double>("walk.position", {3}, {0, 0, 0})
                         .expect<double>("sil_mean", {}, {0.0})))
      .invariant("UML_OS.Demo.PositionBounded", UMLOS_CHECK_AFTER_ACTION, position_bounded);
}

}  // namespace

UMLOS_SDK_MODULE(describe)
