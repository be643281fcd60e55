// growing_batch.cpp — a data operator for the II.H replan test: writes
// model.input.x as [rows(t), cols] with rows = config growing.rows_before
// before iteration config growing.at and growing.rows_after from then on
// (values i * 0.01 + t), so the ModelIR executor sees a shape leave its
// envelope mid-run, at an iteration boundary.
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

void make_batch(sdk::Context& c) {
  const int64_t t = c.iteration();
  const int64_t rows = t < c.config<int64_t>("growing.at", 3) ? c.config<int64_t>("growing.rows_before", 2)
                                                              : c.config<int64_t>("growing.rows_after", 4);
  const int64_t cols = c.config<int64_t>("growing.cols", 3);
  std::vector<double> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) * 0.01 + static_cast<double>(t);
  c.write(c.output("model.input.x", UMLOS_DTYPE_F64, {rows, cols}), x);
}

sdk::Module describe() {
  return sdk::Module("test_growing_batch", "1")
      .add(sdk::Operator("Test.GrowingBatch_v1")
               .summary("model.input.x of config.growing.rows_before rows, rows_after from iteration growing.at")
               .pure()
               .output("model.input.x", UMLOS_DTYPE_F64, sdk::any_shape, UMLOS_VALUE_PERSISTENT)
               .run(make_batch));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
