// model_update.cpp — Update_v1 (model_ops.hpp).
#include "model_ops.hpp"
#include "numerics.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;
namespace num = umlos::numerics;

namespace model_ops {

// ------------------------------------------------------------ Update_v1

namespace {

// The optimiser state is run state: it comes back from checkpoints, which
// are files. Update_v1 reads it only in the layout it writes (f64 of the
// parameter's shape; one-element step and beta powers), whoever wrote it.
template <class T>
T one_element(const sdk::Context& c, const umlos_tensor* t, const char* name) {
  const std::vector<T> v = c.read<T>(t);
  if (v.size() != 1) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::shape_string(c.shape(t)),
                     ", expected one element");
  }
  return v[0];
}

void check_moment(const sdk::Context& c, const umlos_tensor* t, const std::string& name, const Param& p) {
  if (c.dtype(t) != UMLOS_DTYPE_F64 || c.shape(t) != p.shape) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::dtype_name(c.dtype(t)),
                     sdk::shape_string(c.shape(t)), ", expected f64", sdk::shape_string(p.shape),
                     " (the shape of theta.", p.id, ")");
  }
}

bool driver_has(const sdk::Context& c, const char* primitive) {
  const std::vector<std::string> names = c.driver_primitives().primitives;
  return std::find(names.begin(), names.end(), primitive) != names.end();
}

// The canonical sum of the squares of every gradient, in registration
// order as one sequence (a parameter the loss does not reach counts as
// zeros), each value multiplied by `scale` unless that is 1. The sum in
// progress is carried from one gradient to the next: on the driver (its
// `sum_squares`, docs/primitives.md "Optimiser") over each gradient where
// it lies, here over a binary64 copy of each. The same additions in the
// same order.
double sum_of_squares(sdk::Context& c, const std::vector<Param>& ps, const std::map<std::string, umlos_tensor*>& grads,
                      int32_t dtype, double scale) {
  umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
  if (driver_has(c, "sum_squares")) {
    umlos_tensor* state = c.temp(UMLOS_DTYPE_F64, {3});
    for (const Param& q : ps) {
      auto it = grads.find(q.id);
      const umlos_tensor* g = it != grads.end() ? it->second : c.temp(dtype, q.shape);
      c.dispatch("sum_squares", {g, state}, {state}, {sdk::Attr::real("scale", scale)});
    }
    const std::vector<double> v = c.read<double>(state);
    s = {v[0], v[1], static_cast<int64_t>(v[2])};
  } else {
    std::vector<double> g;
    for (const Param& q : ps) {
      g.assign(sdk::element_count(q.shape), 0.0);
      auto it = grads.find(q.id);
      if (it != grads.end()) c.read_f64(it->second, g.data(), g.size());
      if (scale != 1.0)
        for (double& x : g) x *= scale;
      num::canonical_add_squares(s, g.data(), g.size());
    }
  }
  return umlos_canonical_sum_result(&s);
}

struct GradientNorm {
  double norm = 0, scale = 1.0, clipped = 0;
};

// Global L2 norm in binary64, then the clipping factor for config
// clip_norm, and the norm after clipping, recomputed so that Validate_v1
// checks the bound on the gradient actually applied. (Unclipped, x * 1.0
// == x and the sum of the same squares is the same value: the norm itself.)
GradientNorm gradient_norm(sdk::Context& c, const std::vector<Param>& ps,
                           const std::map<std::string, umlos_tensor*>& grads, int32_t dtype) {
  GradientNorm r;
  r.norm = UMLOS_SQRT(sum_of_squares(c, ps, grads, dtype, 1.0));
  if (!std::isfinite(r.norm))
    throw sdk::Error(UMLOS_INVALID_OBJECTIVE, "the gradient norm is ", r.norm, " (no update applied)");
  const double clip = c.config<double>("clip_norm", 5.0);
  if (clip > 0 && r.norm > clip) r.scale = clip / r.norm;
  r.clipped = r.scale != 1.0 ? UMLOS_SQRT(sum_of_squares(c, ps, grads, dtype, r.scale)) : r.norm;
  return r;
}

}  // namespace

std::vector<double> moment(const sdk::Context& c, const umlos_tensor* t, const std::string& name, const Param& p) {
  check_moment(c, t, name, p);
  return c.read<double>(t);
}

// The backward walk of a graph as an earlier step recorded it (engine.hpp,
// BackwardScript), for the same graph (held here, so its address stays
// its own), seeds, wrt and order; a new one, recorded on its first use,
// otherwise. Each step of a run asks for the same one, and walking the
// graph again took part of every step's host time.
ir::BackwardScript* backward_script(const std::shared_ptr<const ir::Graph>& g, const std::vector<ir::Seed>& seeds,
                                    const std::vector<std::string>& wrt, const std::vector<size_t>& order) {
  struct Kept {
    std::shared_ptr<const ir::Graph> graph;
    std::vector<std::string> seeds, wrt;
    std::vector<size_t> order;
    ir::BackwardScript script;
  };
  thread_local std::vector<std::unique_ptr<Kept>> kept;  // most recent last
  std::vector<std::string> ids;
  for (const ir::Seed& sd : seeds) ids.push_back(sd.id);
  for (auto& k : kept)
    if (k->graph == g && k->seeds == ids && k->wrt == wrt && k->order == order) return &k->script;
  if (kept.size() == 4) kept.erase(kept.begin());
  kept.push_back(std::make_unique<Kept>(Kept{g, ids, wrt, order, {}}));
  return &kept.back()->script;
}

// Gradient of L_tot (backward seeded with the loss weights), global L2 norm
// in binary64 (parameter registration order, 256-element chunks), clipping
// to config clip_norm, then the optimiser (config optimizer.name: adam |
// sgd) with decoupled weight decay on every trainable parameter.
void update(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode", "decode", "head", "loss"});
  const Dims& d = bound.d;
  const ir::Graph& g = bound.g();
  ir::Binding& b = bound.b;
  std::vector<ir::Seed> seeds;
  for (const Term& term : loss_terms())
    seeds.push_back({term.id, c.config<double>(term.weight_key, term.default_weight)});
  const std::vector<Param> ps = parameters(d);
  std::vector<std::string> wrt;
  for (const Param& q : ps) wrt.push_back(q.id);
  // Gradient buffers: temps, or (config placement: tmmu, with the manifest's
  // tmmu strategy) views into one "gradients" arena at the offsets the
  // strategy plans over backward steps (docs/model.md). Same values either way.
  std::vector<size_t> order(g.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  const std::string placement = c.config("placement", "temps");
  ir::BackwardScript* script = backward_script(bound.graph, seeds, wrt, order);
  ir::GradAllocator alloc;
  if (placement == "tmmu") {
    alloc = ir::place_gradient_buffers(c, g, b, seeds, wrt, order, ir::OwnGradBuffer{}, script).alloc;
  } else if (placement != "temps") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'placement' is '", placement, "', expected temps or tmmu");
  }
  if (ir::Sharder* shard = bound.sharder()) {
    for (const auto& [id, t] : b)
      if (umlos_tensor* whole = const_cast<umlos_tensor*>(c.optional_input(("model.act.whole." + id).c_str())))
        shard->preload(id, whole);
  }
  const std::map<std::string, umlos_tensor*> grads =
      ir::backward(c, g, b, seeds, wrt, order, ir::TraceHook{}, alloc, bound.sharder(), script);

  const GradientNorm gn = gradient_norm(c, ps, grads, d.dtype);
  const double norm = gn.norm, scale = gn.scale, clipped = gn.clipped;
  // A gradient as binary64, scaled as clipping asks, for the optimiser
  // steps that run here; zeros where the loss does not reach the parameter.
  auto host_grad = [&](size_t i) {
    std::vector<double> g(sdk::element_count(ps[i].shape), 0.0);
    auto it = grads.find(ps[i].id);
    if (it != grads.end()) c.read_f64(it->second, g.data(), g.size());
    if (scale != 1.0)
      for (double& x : g) x *= scale;
    return g;
  };

  const std::string opt = c.config("optimizer.name", "adam");
  const double lr = c.config<double>("optimizer.lr", 1e-3);
  const double wd = c.config<double>("optimizer.weight_decay", 0.0);
  int64_t step = 0;
  if (const umlos_tensor* s = c.optional_input("opt.step")) step = one_element<int64_t>(c, s, "opt.step");
  ++step;
  if (opt == "adam") {
    const double b1 = c.config<double>("optimizer.beta1", 0.9), b2 = c.config<double>("optimizer.beta2", 0.999);
    const double eps = c.config<double>("optimizer.eps", 1e-8);
    // beta^t by repeated multiplication (no libm pow): kept in the state.
    double b1_pow = b1, b2_pow = b2;
    if (const umlos_tensor* p1 = c.optional_input("opt.beta1_pow"))
      b1_pow = one_element<double>(c, p1, "opt.beta1_pow") * b1;
    if (const umlos_tensor* p2 = c.optional_input("opt.beta2_pow"))
      b2_pow = one_element<double>(c, p2, "opt.beta2_pow") * b2;
    // Where the driver has the optimiser step (docs/primitives.md,
    // "Optimiser"), each parameter's step runs there on the tensors as
    // they lie; otherwise here, on copies. The same operations in the same
    // order: the same bits.
    const bool on_driver = driver_has(c, "adam");
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string m_name = "opt.m." + ps[i].id, v_name = "opt.v." + ps[i].id;
      const umlos_tensor* mt = c.optional_input(m_name.c_str());
      const umlos_tensor* vt = c.optional_input(v_name.c_str());
      umlos_tensor* theta_t = b.at(ps[i].id);
      auto grad_it = grads.find(ps[i].id);
      if (on_driver && c.dtype(theta_t) == d.dtype && (grad_it == grads.end() || c.dtype(grad_it->second) == d.dtype)) {
        if (c.shape(theta_t) != ps[i].shape) {
          throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "theta.", ps[i].id, " is ", sdk::shape_string(c.shape(theta_t)),
                           ", expected ", sdk::shape_string(ps[i].shape));
        }
        // Absent moments (the first step) and an absent gradient (a
        // parameter the loss does not reach) are zeros, as on the host.
        if (mt) check_moment(c, mt, m_name, ps[i]);
        if (vt) check_moment(c, vt, v_name, ps[i]);
        const umlos_tensor* g = grad_it != grads.end() ? grad_it->second : c.temp(d.dtype, ps[i].shape);
        if (!mt) mt = c.temp(UMLOS_DTYPE_F64, ps[i].shape);
        if (!vt) vt = c.temp(UMLOS_DTYPE_F64, ps[i].shape);
        c.dispatch(
            "adam", {theta_t, g, mt, vt},
            {c.output(("theta." + ps[i].id).c_str(), d.dtype, ps[i].shape),
             c.output(m_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape),
             c.output(v_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape)},
            {sdk::Attr::real("lr", lr), sdk::Attr::real("beta1", b1), sdk::Attr::real("beta2", b2),
             sdk::Attr::real("eps", eps), sdk::Attr::real("weight_decay", wd), sdk::Attr::real("beta1_pow", b1_pow),
             sdk::Attr::real("beta2_pow", b2_pow), sdk::Attr::real("grad_scale", scale)});
        continue;
      }
      const std::vector<double> g = host_grad(i);
      std::vector<double> m = mt ? moment(c, mt, m_name, ps[i]) : std::vector<double>(g.size(), 0.0);
      std::vector<double> v = vt ? moment(c, vt, v_name, ps[i]) : std::vector<double>(g.size(), 0.0);
      std::vector<double> theta = c.read_f64(b.at(ps[i].id));
      if (theta.size() != g.size()) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "theta.", ps[i].id, " holds ", theta.size(), " elements, expected ",
                         g.size());
      }
      num::adam_step(num::isa_best(), theta.size(), g.data(), m.data(), v.data(), theta.data(),
                     {b1, b2, eps, lr, wd, b1_pow, b2_pow});
      c.write(c.output(m_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), m);
      c.write(c.output(v_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), v);
      c.write_f64(c.output(("theta." + ps[i].id).c_str(), d.dtype, ps[i].shape), theta);
    }
    c.write(c.output("opt.beta1_pow", UMLOS_DTYPE_F64, {}), std::vector<double>{b1_pow});
    c.write(c.output("opt.beta2_pow", UMLOS_DTYPE_F64, {}), std::vector<double>{b2_pow});
  } else if (opt == "sgd") {
    const double momentum = c.config<double>("optimizer.momentum", 0.9);
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string m_name = "opt.m." + ps[i].id;
      const std::vector<double> g = host_grad(i);
      std::vector<double> m(g.size(), 0.0);
      if (const umlos_tensor* t = c.optional_input(m_name.c_str())) m = moment(c, t, m_name, ps[i]);
      std::vector<double> theta = c.read_f64(b.at(ps[i].id));
      if (theta.size() != g.size()) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "theta.", ps[i].id, " holds ", theta.size(), " elements, expected ",
                         g.size());
      }
      for (size_t k = 0; k < theta.size(); ++k) {
        m[k] = momentum * m[k] + g[k];
        theta[k] -= lr * (m[k] + wd * theta[k]);
      }
      c.write(c.output(m_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), m);
      c.write_f64(c.output(("theta." + ps[i].id).c_str(), d.dtype, ps[i].shape), theta);
    }
  } else {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config optimizer.name is '", opt, "', expected adam or sgd");
  }
  c.write(c.output("opt.step", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{step});
  c.write(c.output("grad_norm", UMLOS_DTYPE_F64, {}), std::vector<double>{norm});
  c.write(c.output("grad_norm_clipped", UMLOS_DTYPE_F64, {}), std::vector<double>{clipped});
}

}  // namespace model_ops
