// gaussian_noise.cpp — Acme.Augment.GaussianNoise_v1: y = x + sigma * N(0,1)
// in x's own dtype (f32 or f64), one draw of standard normals from stream
// `misc`. It knows nothing of batches: the manifest binds its `x` and `y`
// to whatever run value it should perturb (docs/manifest.md, "Wiring").
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

template <class T>
void add_noise(sdk::Context& c, const umlos_tensor* x, double sigma) {
  std::vector<T> v = c.read<T>(x);
  const std::vector<double> z = c.draw_host<double>(UMLOS_STREAM_MISC, UMLOS_DIST_NORMAL_F64, v.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(static_cast<double>(v[i]) + sigma * z[i]);
  c.write(c.output("y", c.dtype(x), c.shape(x)), v);
}

void gaussian_noise(sdk::Context& c) {
  const umlos_tensor* x = c.input("x");
  const double sigma = c.config<double>("sigma", 0.1);
  if (c.dtype(x) == UMLOS_DTYPE_F32)
    add_noise<float>(c, x, sigma);
  else if (c.dtype(x) == UMLOS_DTYPE_F64)
    add_noise<double>(c, x, sigma);
  else
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "x must be f32 or f64");
}

sdk::Module describe() {
  return sdk::Module("acme_noise", "1.0.0")
      .add(sdk::Operator("Acme.Augment.GaussianNoise_v1")
               .summary("y = x + sigma * N(0,1) in x's dtype (config sigma, default 0.1)")
               .stateful()
               .draws(UMLOS_STREAM_MISC, 1)
               .input("x", UMLOS_DTYPE_ANY)
               .output("y", UMLOS_DTYPE_ANY)
               .run(gaussian_noise)
               .test(sdk::TestVector("sigma 0 keeps an f32 x")
                         .config("sigma", 0.0)
                         .input<float>("x", {2, 2}, {1.0f, -2.0f, 0.5f, 4.0f})
                         .expect<float>("y", {2, 2}, {1.0f, -2.0f, 0.5f, 4.0f}))
               .test(sdk::TestVector("sigma 0 keeps an f64 x")
                         .config("sigma", 0.0)
                         .input<double>("x", {3}, {1.0, -2.0, 3.5})
                         .expect<double>("y", {3}, {1.0, -2.0, 3.5})));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
