// policy_fixture_module.cpp — libtest_policy_fixture.so: stand-ins for the
// model operators so that the policy module's operators run through the
// real kernel procedure without a data set:
//   Test.Policy.ClusteredLatents_v1  (model_encode_op) appends test.batch rows
//       to the latent ring: insertion j lies near basis direction j mod
//       test.clusters of R^test.dim (jitter from a hash, no RNG draws), global
//       sample index j.
//   Test.Policy.ScriptedLoss_v1      (loss_op) loss_total = 1 / min(t, test.plateau),
//       grad_norm = 2 loss_total; appends (loss_total, state) to loss_hist.
//   Test.Policy.Augment_v1           (augment_op) np.protos <- cluster.centroids, state <- S_PROTO.
#include <algorithm>
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

// A fixed hash of (j, d) to [-1, 1): splitmix64.
double jitter_unit(uint64_t j, uint64_t d) {
  uint64_t x = j * 0x9E3779B97F4A7C15ull + d * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

void clustered_latents(sdk::Context& c) {
  const int64_t clusters = c.config<int64_t>("test.clusters", 3);
  const int64_t dim = c.config<int64_t>("test.dim", 4);
  const int64_t batch = c.config<int64_t>("test.batch", 6);
  const int64_t cap = c.config<int64_t>("test.cap", 48);
  const double jitter = c.config<double>("test.jitter", 0.05);
  std::vector<double> z(static_cast<size_t>(cap * dim), 0.0);
  std::vector<int64_t> index(static_cast<size_t>(cap), -1);
  int64_t count = 0;
  if (const umlos_tensor* t = c.optional_input("latent.z")) z = c.read<double>(t);
  if (const umlos_tensor* t = c.optional_input("latent.index")) index = c.read<int64_t>(t);
  if (const umlos_tensor* t = c.optional_input("latent.count")) count = c.read<int64_t>(t).at(0);
  for (int64_t b = 0; b < batch; ++b, ++count) {
    const int64_t row = count % cap;
    for (int64_t d = 0; d < dim; ++d) {
      double v = jitter * jitter_unit(static_cast<uint64_t>(count), static_cast<uint64_t>(d));
      if (d == count % clusters) v += 1.0;
      z[static_cast<size_t>(row * dim + d)] = v;
    }
    index[static_cast<size_t>(row)] = count;
  }
  c.write(c.output("latent.z", UMLOS_DTYPE_F64, {cap, dim}), z);
  c.write(c.output("latent.index", UMLOS_DTYPE_I64, {cap}), index);
  c.write(c.output("latent.count", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{count});
}

void scripted_loss(sdk::Context& c) {
  const int64_t plateau = c.config<int64_t>("test.plateau", 10);
  const int64_t t = c.iteration();
  const double loss = 1.0 / static_cast<double>(std::min(t, plateau));
  std::vector<double> hist;
  if (const umlos_tensor* h = c.optional_input("loss_hist")) hist = c.read<double>(h);
  double state = 0.0;
  if (const umlos_tensor* s = c.optional_input("state")) state = static_cast<double>(c.read<int64_t>(s).at(0));
  hist.push_back(loss);
  hist.push_back(state);
  if (hist.size() > 512) hist.erase(hist.begin(), hist.end() - 512);
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{loss});
  c.write(c.output("grad_norm", UMLOS_DTYPE_F64, {}), std::vector<double>{2.0 * loss});
  c.write(c.output("loss_hist", UMLOS_DTYPE_F64, {static_cast<int64_t>(hist.size() / 2), 2}), hist);
}

void augment(sdk::Context& c) {
  const umlos_tensor* cen = c.input("cluster.centroids");
  c.write(c.output("np.protos", UMLOS_DTYPE_F64, c.shape(cen)), c.read<double>(cen));
  c.write(c.output("state", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{1});
}

sdk::Module describe() {
  constexpr uint32_t O = UMLOS_VALUE_OPTIONAL, P = UMLOS_VALUE_PERSISTENT;
  return sdk::Module("test_policy_fixture", "0.1.0")
      .add(sdk::Operator("Test.Policy.ClusteredLatents_v1")
               .summary("appends clustered unit-ish rows to latent.*")
               .stateful()
               .input("latent.z", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any}, O)
               .input("latent.index", UMLOS_DTYPE_I64, sdk::Dims{sdk::any}, O)
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .output("latent.z", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any}, P)
               .output("latent.index", UMLOS_DTYPE_I64, sdk::Dims{sdk::any}, P)
               .output("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .run(clustered_latents)
               .test(sdk::TestVector("one batch of 2 rows")
                         .config("test.batch", int64_t{2})
                         .config("test.cap", int64_t{3})
                         .config("test.jitter", 0.0)
                         .config("test.dim", int64_t{2})
                         .expect<int64_t>("latent.index", {3}, {0, 1, -1})
                         .expect<double>("latent.z", {3, 2}, {1, 0, 0, 1, 0, 0})))
      .add(sdk::Operator("Test.Policy.ScriptedLoss_v1")
               .summary("loss_total = 1/min(t, plateau); loss_hist appended")
               .stateful()
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, 2}, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("grad_norm", UMLOS_DTYPE_F64, sdk::Dims{}, P)
               .output("loss_hist", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, 2}, P)
               .run(scripted_loss))
      .add(sdk::Operator("Test.Policy.Augment_v1")
               .summary("np.protos <- cluster.centroids; state <- S_PROTO")
               .stateful()
               .input("cluster.centroids", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any})
               .output("np.protos", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any}, P)
               .output("state", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .run(augment));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
