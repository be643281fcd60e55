// example_ops.cpp — a complete UML_OS module: two operators, each with its
// declaration (purity, inputs, outputs, RNG use) and its own test vectors,
// which `umlos conformance libexample_ops.so` runs under the kernel.
//
// Copy, rename the module and the operators (names are global: use your
// organisation as the first component), and replace the bodies.
#include <umlos/sdk.hpp>

#include <vector>

namespace sdk = umlos::sdk;

namespace {

// y = scale * x, elementwise, for an f64 tensor of any shape. `scale` comes
// from the manifest's config map (key "scale", default 2).
void scale(sdk::Context& c) {
  const umlos_tensor* x = c.input("x");
  const double factor = c.config<double>("scale", 2.0);
  std::vector<double> values = c.read<double>(x);
  for (double& v : values) v *= factor;
  c.write(c.output("y", UMLOS_DTYPE_F64, c.shape(x)), values);
}

// y = x + sigma * N(0,1): one draw of standard normals from stream `misc`,
// as many values as x has, delivered to the host. The declaration below says
// "exactly 1 draw from stream misc"; the kernel checks it on every call.
void add_noise(sdk::Context& c) {
  const umlos_tensor* x = c.input("x");
  const double sigma = c.config<double>("sigma", 1.0);
  std::vector<double> values = c.read<double>(x);
  const std::vector<double> noise = c.draw_host<double>(UMLOS_STREAM_MISC, UMLOS_DIST_NORMAL_F64, values.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] += sigma * noise[i];
  c.write(c.output("y", UMLOS_DTYPE_F64, c.shape(x)), values);
}

sdk::Module describe() {
  return sdk::Module("example_ops", "1.0.0")
      .add(sdk::Operator("Example.Math.Scale_v1")
               .summary("y = scale * x (config key \"scale\", default 2)")
               .pure()
               .input("x", UMLOS_DTYPE_F64)
               .output("y", UMLOS_DTYPE_F64)
               .run(scale)
               .test(sdk::TestVector("scale from config")
                         .config("scale", 3.0)
                         .input<double>("x", {4}, {1.0, -2.0, 0.5, 4.0})
                         .expect<double>("y", {4}, {3.0, -6.0, 1.5, 12.0}))
               .test(sdk::TestVector("default scale, matrix")
                         .input<double>("x", {2, 2}, {1.0, 2.0, -0.25, 0.0})
                         .expect<double>("y", {2, 2}, {2.0, 4.0, -0.5, 0.0}))
               .test(sdk::TestVector("integer scale")
                         .config("scale", 5)
                         .input<double>("x", {}, {1.5})
                         .expect<double>("y", {}, {7.5})))
      .add(sdk::Operator("Example.Random.AddNoise_v1")
               .summary("y = x + sigma * N(0,1) (config key \"sigma\", default 1)")
               .stateful()  // spec 004: operators that draw are STATEFUL
               .draws(UMLOS_STREAM_MISC, 1)
               .input("x", UMLOS_DTYPE_F64)
               .output("y", UMLOS_DTYPE_F64)
               .run(add_noise)
               // With sigma = 0 the draw still happens (and is counted) but
               // y == x exactly, so the expected output is known in advance.
               .test(sdk::TestVector("sigma 0 leaves x unchanged")
                         .config("sigma", 0.0)
                         .seed(7)
                         .input<double>("x", {3}, {1.0, -2.0, 3.5})
                         .expect<double>("y", {3}, {1.0, -2.0, 3.5}))
               // Values depend on the seed: conformance checks the draw
               // count and that two runs give identical bytes.
               .test(sdk::TestVector("sigma 1, seed 42").seed(42).input<double>("x", {4}, {0, 0, 0, 0})));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
