// model_contract.cpp — Contract.RestoredState and Contract.Validate_v1
// (model_ops.hpp).
#include "model_ops.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {

// ------------------------------------------------------------ Contract.RestoredState

// UMLOS_CHECK_AFTER_RESTORE: the state a checkpoint brings back has the
// layout this module's operators write, checked before any of them runs
// (the kernel names the checkpoint file): every optimiser moment opt.m.<id>
// / opt.v.<id> is f64 with the shape of theta.<id> (the kernel checks theta
// itself against the layout bootstrap gave it), opt.step is i64[],
// opt.beta1_pow / opt.beta2_pow are f64[], loss_hist is f64[n,2] with
// n <= 256. A run without the model's parameters has nothing to check.
void restored_state(sdk::Context& c) {
  Dims d = dims_from(c, 1, 1, 1);
  if (!dims_from_theta(c, d)) return;
  const std::vector<Param> ps = parameters(d);
  for (const Param& p : ps) {
    const umlos_tensor* th = c.optional_input(("theta." + p.id).c_str());
    if (!th || c.shape(th) != p.shape) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'theta.", p.id, "' is ",
                       th ? sdk::shape_string(c.shape(th)) : std::string("absent"), ", expected ",
                       sdk::shape_string(p.shape));
    }
    for (const char* kind : {"opt.m.", "opt.v."}) {
      const std::string n = kind + p.id;
      if (const umlos_tensor* t = c.optional_input(n.c_str())) moment(c, t, n, p);
    }
  }
  auto scalar = [&](const char* name, int32_t dtype) {
    const umlos_tensor* t = c.optional_input(name);
    if (!t) return;
    const sdk::Shape shape = c.shape(t);
    if (c.dtype(t) != dtype || !shape.empty()) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::dtype_name(c.dtype(t)),
                       sdk::shape_string(shape), ", expected ", sdk::dtype_name(dtype), "[]");
    }
  };
  scalar("opt.step", UMLOS_DTYPE_I64);
  scalar("opt.beta1_pow", UMLOS_DTYPE_F64);
  scalar("opt.beta2_pow", UMLOS_DTYPE_F64);
  if (const umlos_tensor* h = c.optional_input("loss_hist")) {
    const sdk::Shape s = c.shape(h);
    if (c.dtype(h) != UMLOS_DTYPE_F64 || s.size() != 2 || s[1] != 2 || s[0] > 256) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'loss_hist' is ", sdk::dtype_name(c.dtype(h)),
                       sdk::shape_string(s), ", expected f64[n,2] with n <= 256");
    }
  }
}

// ------------------------------------------------------------ Contract.Validate_v1

void validate(sdk::Context& c) {
  const double tol = c.config<double>("validate.tolerance", 1e-6);
  int64_t checks = 0;
  // KL >= 0 within tolerance.
  if (const umlos_tensor* kl = c.optional_input("loss.kl")) {
    const double v = scalar_f64(c, kl);
    if (v < -tol)
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "KL = ", v, " < 0 (tolerance ", tol, "); counterexample: loss.kl");
    ++checks;
  }
  // Cov(z) positive semi-definite: an LDL^T factorisation in binary64 whose
  // pivots must not fall below -tol * max diagonal.
  if (const umlos_tensor* cov = c.optional_input("model.act.cov_z")) {
    const sdk::Shape s = c.shape(cov);
    const int64_t p = s.at(0);
    std::vector<double> a = c.read_f64(cov);
    double maxdiag = 0;
    for (int64_t i = 0; i < p; ++i) maxdiag = std::max(maxdiag, a[i * p + i]);
    std::vector<double> L(a.size(), 0.0), D(static_cast<size_t>(p), 0.0);
    for (int64_t j = 0; j < p; ++j) {
      double dj = a[j * p + j];
      for (int64_t k = 0; k < j; ++k) dj -= L[j * p + k] * L[j * p + k] * D[k];
      D[j] = dj;
      if (dj < -tol * std::max(1.0, maxdiag)) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "Cov(z) is not positive semi-definite: LDL^T pivot ", j, " = ", dj,
                         " (tolerance ", tol * std::max(1.0, maxdiag), "); minimal counterexample: the leading ", j + 1,
                         "x", j + 1, " block of model.act.cov_z");
      }
      for (int64_t i = j + 1; i < p; ++i) {
        double v = a[i * p + j];
        for (int64_t k = 0; k < j; ++k) v -= L[i * p + k] * L[j * p + k] * D[k];
        L[i * p + j] = dj > tol ? v / dj : 0.0;
      }
    }
    ++checks;
  }
  // Probability rows of the driver's softmax of the logits sum to 1.
  if (const umlos_tensor* logits = c.optional_input("model.act.logits")) {
    const sdk::Shape s = c.shape(logits);
    if (s.size() == 2 && s[1] > 1) {
      umlos_tensor* prob = c.temp(c.dtype(logits), s);
      c.dispatch("softmax", {logits}, {prob});
      const std::vector<double> pv = c.read_f64(prob);
      const double ptol = c.dtype(logits) == UMLOS_DTYPE_F32 ? 1e-5 : 1e-12;
      for (int64_t r = 0; r < s[0]; ++r) {
        double sum = 0;
        for (int64_t k = 0; k < s[1]; ++k) sum += pv[r * s[1] + k];
        if (std::fabs(sum - 1.0) > ptol)
          throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "softmax(logits) row ", r, " sums to ", sum,
                           "; minimal counterexample: row ", r, " of model.act.logits");
      }
      ++checks;
    }
  }
  // The last update honoured the clip bound.
  if (const umlos_tensor* gc = c.optional_input("grad_norm_clipped")) {
    const double clip = c.config<double>("clip_norm", 5.0);
    const double v = scalar_f64(c, gc);
    if (clip > 0 && v > clip * (1.0 + 1e-12))
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "gradient norm after clipping is ", v, " > clip_norm ", clip);
    ++checks;
  }
  c.write(c.output("contract.checks", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{checks});
}

}  // namespace model_ops
