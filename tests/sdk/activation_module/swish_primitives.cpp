// swish_primitives.cpp — a module that provides a primitive to every driver
// (ABI 1.6): swish(x) = x * sigmoid(x) and its gradient, in f32 and f64,
// computed in binary64 and rounded once to the dtype. The kernel runs them
// on host copies of the operands whenever the active driver lacks the name.
#include <cmath>
#include <cstring>

#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

uint64_t count(const umlos_host_tensor& t) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < t.rank; ++i) n *= static_cast<uint64_t>(t.dims[i]);
  return n;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Applies f element by element in the output's float dtype.
template <class F>
umlos_status elementwise(const umlos_services* svc, umlos_ctx* ctx, const umlos_host_tensor* in, uint32_t n_in,
                         const umlos_host_tensor* out, uint32_t n_out, uint32_t want_in, F f) {
  if (n_in != want_in || n_out != 1) return svc->error(ctx, UMLOS_INVALID_ARGUMENT, "swish: wrong operand count");
  const int32_t dt = out[0].dtype;
  if (dt != UMLOS_DTYPE_F32 && dt != UMLOS_DTYPE_F64)
    return svc->error(ctx, UMLOS_PRIMITIVE_UNSUPPORTED, "swish: f32 and f64 only");
  const uint64_t n = count(out[0]);
  for (uint32_t i = 0; i < n_in; ++i)
    if (in[i].dtype != dt || count(in[i]) != n)
      return svc->error(ctx, UMLOS_SHAPE_MISMATCH, "swish: operands differ in dtype or element count");
  auto at = [&](const umlos_host_tensor& t, uint64_t i) {
    return dt == UMLOS_DTYPE_F32 ? static_cast<double>(static_cast<const float*>(t.data)[i])
                                 : static_cast<const double*>(t.data)[i];
  };
  for (uint64_t i = 0; i < n; ++i) {
    const double y = f(at(in[0], i), n_in > 1 ? at(in[1], i) : 0.0);
    if (dt == UMLOS_DTYPE_F32)
      static_cast<float*>(out[0].data)[i] = static_cast<float>(y);
    else
      static_cast<double*>(out[0].data)[i] = y;
  }
  return UMLOS_OK;
}

umlos_status swish(const umlos_services* svc, umlos_ctx* ctx, const umlos_host_tensor* in, uint32_t n_in,
                   const umlos_host_tensor* out, uint32_t n_out, const umlos_attr*, uint32_t, void*) {
  return elementwise(svc, ctx, in, n_in, out, n_out, 1, [](double x, double) { return x * sigmoid(x); });
}

umlos_status swish_grad(const umlos_services* svc, umlos_ctx* ctx, const umlos_host_tensor* in, uint32_t n_in,
                        const umlos_host_tensor* out, uint32_t n_out, const umlos_attr*, uint32_t, void*) {
  return elementwise(svc, ctx, in, n_in, out, n_out, 2, [](double x, double dy) {
    const double s = sigmoid(x);
#if defined(SWISH_WRONG_GRAD)
    return dy * s;  // a planted mistake: the x * s * (1 - s) term is missing
#else
    return dy * (s + x * s * (1.0 - s));
#endif
  });
}

const umlos_primitive_desc kSwish = {
    sizeof(umlos_primitive_desc), "swish", "x * sigmoid(x)", UMLOS_PRIMITIVE_ELEMENTWISE, 0, swish, nullptr};
const umlos_primitive_desc kSwishGrad = {sizeof(umlos_primitive_desc),
                                         "swish_grad",
                                         "dy * d/dx swish(x)",
                                         UMLOS_PRIMITIVE_ELEMENTWISE,
                                         0,
                                         swish_grad,
                                         nullptr};

sdk::Module describe() { return sdk::Module("test_swish", "1.0.0").primitive(kSwish).primitive(kSwishGrad); }

}  // namespace

UMLOS_SDK_MODULE(describe)
