// model.cpp — libumlos_model.so: the spec 004 model operators.
//
// Every operator here runs (a segment of) the graph of graph.hpp through the
// ModelIR engine on the manifest's driver. Run state lives in the kernel's
// value store (docs/training.md): parameters `theta.<id>`, optimiser state
// `opt.*`, the latent buffer `latent.*`, `loss_hist`, `state`; activations of
// the current iteration are `model.act.<id>` so Update_v1 can run backward
// over what Encode/Decode/Forward/TotalLoss computed.
//
// Numbers (docs/model.md): parameters and activations in config
// compute_dtype (f32 default); every reduction inside the driver's
// primitives in binary64; L_tot, the gradient norm, clipping and the
// optimiser step on the host in binary64 in parameter registration order.
//
// This file: the module's descriptors and conformance vectors; the
// operators are in the model_*.cpp files listed in model_ops.hpp.
#include "model_ops.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {
namespace {

// ------------------------------------------------------------ test vectors

// The conformance vectors run each operator on a tiny model (D 2, hidden 3,
// latent 2, head 2, 2 classes, batch 2, binary64) with inputs that follow a
// fixed pattern; every vector runs twice under the kernel (identical
// outputs, declared draws, contracts), and the ones with closed forms check
// values.
constexpr const char* kTinyEquations = "y[0] = (sin(z0) * z1) + 0.5\ny[1] = exp(z1) / (z0 + 2)";

Dims tiny_dims() {
  Dims d;
  d.batch = 2;
  d.features = 2;
  d.latent = 2;
  d.hidden = 3;
  d.head_hidden = 2;
  d.outputs = 2;
  d.dtype = UMLOS_DTYPE_F64;
  return d;
}

std::vector<double> pattern(uint64_t n, double scale, double offset = 0.0) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<double>((i * 7 + 3) % 11) / 11.0;
  return v;
}

// `equations`: the prototype path — state S_PROTO, np.protos (the two
// axes of R^2) and one stored equation line per prototype.
sdk::TestVector tiny_vector(const char* name, const std::set<std::string>& segments, bool batch = true,
                            bool num_classes = true, const std::string& equations = "") {
  Dims d = tiny_dims();
  sdk::TestVector v(name);
  if (!equations.empty()) {
    for (const auto& l : umlos::symbolic::parse_lines(equations, d.outputs)) {
      d.equations.push_back(umlos::symbolic::print(l.expr));
      d.eq_output.push_back(l.output);
    }
    const int64_t k = static_cast<int64_t>(d.equations.size());
    std::vector<double> protos(static_cast<size_t>(k * 2), 0.0);
    for (int64_t i = 0; i < k; ++i) protos[static_cast<size_t>(i * 2 + i % 2)] = 1.0;
    v.input<int64_t>("state", {}, {1});
    v.input<double>("np.protos", {k, 2}, protos);
    v.input<uint8_t>("np.protos_equation", {static_cast<int64_t>(equations.size())},
                     std::vector<uint8_t>(equations.begin(), equations.end()));
  }
  v.config("latent_dim", int64_t{2}).config("model.hidden", int64_t{3}).config("model.head_hidden", int64_t{2});
  v.config("compute_dtype", "f64").config("batch_size", int64_t{2}).config("latent_buffer_capacity", int64_t{4});
  if (batch) {
    v.input<double>("batch.x", {2, 2}, {0.25, 0.5, 0.75, 1.0});
    v.input<int64_t>("batch.y", {2}, {0, 1});
    v.input<int64_t>("batch.index", {2}, {3, 1});
  }
  if (num_classes) v.input<int64_t>("data.num_classes", {}, {2});
  for (const Param& q : parameters(d)) {
    v.input<double>("theta." + q.id, q.shape, pattern(sdk::element_count(q.shape), 0.5, -0.2));
  }
  if (!segments.empty()) {
    const ir::Graph g = build(d);
    v.input<double>("model.act.eps", {2, 2}, {0.1, -0.2, 0.3, -0.4});
    for (const ir::Node& n : g.nodes) {
      if (!segments.count(n.segment)) continue;
      // Activations with the right shapes; recon stays in [0, 1], sigma > 0.
      v.input<double>("model.act." + n.output, n.output_shape, pattern(sdk::element_count(n.output_shape), 0.8, 0.1));
    }
  }
  return v;
}

// ------------------------------------------------------------ descriptors

sdk::Module describe() {
  using sdk::Operator;
  const uint32_t P = UMLOS_VALUE_PERSISTENT, O = UMLOS_VALUE_OPTIONAL, IO = UMLOS_VALUE_INOUT;
  return sdk::Module("umlos_model", "0.1.0")
      .add(Operator("UML_OS.Model.InitParameters_v1")
               .summary("theta from manifest-hash-derived bytes (no draws), state S_P, empty latent buffer")
               .stateful()
               .input("data.train.x", UMLOS_DTYPE_F64)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .output("theta.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("state", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .output("latent.z", UMLOS_DTYPE_F64, sdk::any_shape, P)
               .output("latent.index", UMLOS_DTYPE_I64, sdk::any_shape, P)
               .output("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .run(init_parameters)
               .test(sdk::TestVector("tiny model, empty latent ring")
                         .config("latent_dim", int64_t{2})
                         .config("model.hidden", int64_t{3})
                         .config("model.head_hidden", int64_t{2})
                         .config("compute_dtype", "f64")
                         .config("latent_buffer_capacity", int64_t{4})
                         .input<double>("data.train.x", {3, 2}, {0, 1, 2, 3, 4, 5})
                         .input<int64_t>("data.num_classes", {}, {2})
                         .expect<int64_t>("state", {}, {0})
                         .expect<int64_t>("latent.count", {}, {0})
                         .expect<int64_t>("latent.index", {4}, {-1, -1, -1, -1})
                         .expect<double>("theta.enc.b1", {3}, {0, 0, 0})))
      .add(Operator("UML_OS.Model.Encode_v1")
               .summary("two linear layers + reparameterisation; appends z to the latent buffer")
               .stateful()
               .draws(UMLOS_STREAM_INIT, 2)
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("latent.z", UMLOS_DTYPE_F64, sdk::any_shape, IO)
               .input("latent.index", UMLOS_DTYPE_I64, sdk::any_shape, IO)
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, IO)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(encode)
               .test(tiny_vector("encode a batch into an empty ring", {})
                         .seed(11)
                         .input<double>("latent.z", {4, 2}, std::vector<double>(8, 0.0))
                         .input<int64_t>("latent.index", {4}, {-1, -1, -1, -1})
                         .input<int64_t>("latent.count", {}, {3})))
      .add(Operator("UML_OS.Model.Decode_v1")
               .summary("reconstruction from z, clamped to the normalisation range [0, 1]")
               .pure()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(decode)
               .test(tiny_vector("decode z", {"encode"})))
      .add(Operator("UML_OS.Model.Forward_v2")
               .summary("logits = nn_logits + beta * sym_pred (sym_pred = 0 without prototypes)")
               .pure()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(forward_v2)
               .test(tiny_vector("head on z", {"encode"}))
               .test(tiny_vector("head on z with two prototype equations (S_PROTO)", {"encode"}, true, true,
                                 kTinyEquations)))
      .add(Operator("UML_OS.Objective.TotalLoss_v1")
               .summary("L_tot = alpha L_sup + L_aux (III), binary64, fixed term order; appends loss_hist")
               .stateful()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .output("loss.*", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, P)
               .run(total_loss)
               .test(tiny_vector("five terms and loss_hist", {"encode", "decode", "head"})
                         .input<double>("loss_hist", {1, 2}, {2.5, 0})
                         .input<int64_t>("state", {}, {0})))
      .add(Operator("UML_OS.Update_v1")
               .summary("gradient, clipping, optimiser step (adam | sgd), weight decay")
               .stateful()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .input("opt.*", UMLOS_DTYPE_ANY)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("theta.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("opt.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("grad_norm", UMLOS_DTYPE_F64, sdk::Dims{}, P)
               .output("grad_norm_clipped", UMLOS_DTYPE_F64, sdk::Dims{}, P)
               .run(update)
               .test(tiny_vector("one Adam step", {"encode", "decode", "head", "loss"})
                         .expect<int64_t>("opt.step", {}, {1})
                         .expect<double>("opt.beta1_pow", {}, {0.9}))
               .test(tiny_vector("one SGD step with momentum", {"encode", "decode", "head", "loss"})
                         .config("optimizer.name", "sgd")
                         .expect<int64_t>("opt.step", {}, {1}))
               .test(tiny_vector("one Adam step through two prototype equations (S_PROTO)",
                                 {"encode", "decode", "head", "loss"}, true, true, kTinyEquations)
                         .expect<int64_t>("opt.step", {}, {1})))
      .add(Operator("UML_OS.Contract.Validate_v1")
               .summary("KL >= 0, Cov(z) PSD, probability sums, clip bound; minimal counterexample on violation")
               .pure()
               .input("loss.kl", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("model.act.cov_z", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("model.act.logits", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("grad_norm_clipped", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("contract.checks", UMLOS_DTYPE_I64, sdk::Dims{})
               .run(validate)
               .test(sdk::TestVector("KL, PSD covariance, softmax rows, clip bound all hold")
                         .input<double>("loss.kl", {}, {0.5})
                         .input<double>("model.act.cov_z", {2, 2}, {2.0, 1.0, 1.0, 2.0})
                         .input<double>("model.act.logits", {2, 3}, {1, 2, 3, -1, 0, 1})
                         .input<double>("grad_norm_clipped", {}, {4.0})
                         .expect<int64_t>("contract.checks", {}, {4})))
      .add(Operator("UML_OS.StateFingerprint_v1")
               .summary("SHA-256 over the 8 items of spec 004 IV, big-endian")
               .pure()
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("opt.*", UMLOS_DTYPE_ANY)
               .input("latent.z", UMLOS_DTYPE_F64)
               .input("latent.index", UMLOS_DTYPE_I64)
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{})
               .input("data.cursor", UMLOS_DTYPE_I64, sdk::any_shape, O)
               .input("data.permutation_hash", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("np.protos_equation_hash", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .output("state_fp", UMLOS_DTYPE_U8, sdk::Dims{32})
               .run(state_fingerprint)
               .test(tiny_vector("fingerprint of a tiny run state", {}, false, false)
                         .input<double>("latent.z", {4, 2}, pattern(8, 1.0))
                         .input<int64_t>("latent.index", {4}, {0, 1, 2, -1})
                         .input<int64_t>("latent.count", {}, {3})
                         .input<double>("loss_hist", {2, 2}, {2.5, 0, 2.25, 0})))
      .add(Operator("UML_OS.Fingerprint.Functional_v1")
               .summary("functional_fp over the first 1024 validation samples (binary64 inference); held-out metric")
               .pure()
               .input("data.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("functional_fp", UMLOS_DTYPE_U8, sdk::Dims{32})
               .output("probe_loss", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("probe_metric", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("val_accuracy", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("val_r2", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("val_loss", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(functional_fp)
               .test(tiny_vector("probe set cycles a 3-row validation split", {}, false)
                         .input<double>("data.train.x", {3, 2}, {0, 1, 2, 3, 4, 5})
                         .input<double>("data.val.x", {3, 2}, {0.5, 1, 1.5, 2, 5, 4})
                         .input<int64_t>("data.val.y", {3}, {0, 1, 1})
                         .input<double>("data.norm.offset", {2}, {0, 1})
                         .input<double>("data.norm.scale", {2}, {0.25, 0.25})))
      .invariant("UML_OS.Contract.RestoredState", UMLOS_CHECK_AFTER_RESTORE, restored_state);
}

}  // namespace
}  // namespace model_ops

UMLOS_SDK_MODULE(model_ops::describe)
