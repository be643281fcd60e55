// graph.hpp — the spec 004 model as one ModelIR graph, split into segments
// that the VI operators run one after the other (docs/model.md).
//
//   encode  x -> ... -> (mu, logvar)       the model body       (Encode_v1)
//           z = mu + exp(logvar/2) * eps   appended here        (Encode_v1)
//   decode  z -> ... -> recon              the model body       (Decode_v1)
//   head    z -> ... -> logits             the model body       (Forward_v2)
//   loss    L_sup, L_rec, L_KL, L_OT, L_covz  appended here     (TotalLoss_v1)
//
// The body is the built-in spec 004 network (two dense layers per part,
// sizes from config) or a ModelIR graph the manifest declares (top-level
// `model_ir:`, seen by operators as config `model_ir.graph`; model_ir.cpp).
// The reparameterisation, the prototype path and the loss terms are the
// spec's and are always appended by this module, so the RNG draws and the
// contracts do not depend on the body.
//
// Backward (Update_v1) runs once over the whole graph, seeded with the
// manifest's loss weights, so the five terms never need a summing node.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine.hpp"
#include "umlos_names.h"

namespace umlos::model {

namespace ir = umlos::modelir;

enum class Task { Multiclass = UMLOS_TASK_MULTICLASS, Binary = UMLOS_TASK_BINARY, Regression = UMLOS_TASK_REGRESSION };

struct Dims {
  int64_t batch = 64;    // B
  int64_t features = 0;  // D
  int64_t latent = 64;   // p
  int64_t hidden = 256;  // encoder/decoder hidden width
  int64_t head_hidden = 128;
  int64_t outputs = 1;  // C (classes for multiclass, 1 otherwise)
  Task task = Task::Multiclass;
  int32_t dtype = UMLOS_DTYPE_F32;
  bool training = true;  // false: inference (no decoder, no aux terms)
  // The prototype path of Forward_v2 (docs/symbolic.md): k =
  // equations.size() prototypes (np.protos [k, p]); equation i (canonical
  // text, modules/lib/symbolic/expr.hpp) feeds output column eq_output[i].
  // Empty: no prototype nodes, the graph is exactly the spec 004 graph.
  std::vector<std::string> equations;
  std::vector<int64_t> eq_output;
  // The body as a ModelIR graph: the canonical CBOR of config
  // model_ir.graph (docs/model.md, "A model as ModelIR"); empty: the
  // built-in body (hidden, head_hidden).
  std::string model_ir;
};

// How InitParameters_v1 fills a parameter: Glorot-uniform with its fan-in
// and fan-out, zeros or ones.
enum class Init { Glorot, Zeros, Ones };

struct Param {
  std::string id;  // graph id, e.g. "enc.W1"; value "theta.<id>"
  sdk::Shape shape;
  int64_t fan_in = 0, fan_out = 0;  // of a rank-2 [fan_in, fan_out] weight
  Init init = Init::Zeros;
};

// Parameters in registration order (optimiser state and gradients follow
// it): the graph's parameter declarations in order. A rank-2 parameter is
// Glorot-initialised, any other is zeros, unless a model IR says otherwise.
std::vector<Param> parameters(const Dims& d);

// The model body: what the spec 004 operators run between the batch and
// the loss. Nodes carry segment encode, decode or head; `declared` holds
// the body's parameters (registration order) and valued constants.
struct Body {
  std::vector<ir::TensorDecl> declared;
  std::vector<ir::Node> nodes;
  std::map<std::string, Init> init;  // a parameter's init when not by rank
};

// The body of a model IR (config model_ir.graph), for dims d: B, D, C and
// p bound from the run; checked against the interface of docs/model.md
// (INVALID_IR naming the tensor or node). model_ir.cpp.
Body ir_body(const Dims& d);

// d.features and d.outputs (D and C) as the run's parameters fix them, for
// operators that see theta but no batch or data (Contract.RestoredState,
// StateFingerprint_v1). false when theta is not there. model_ir.cpp.
bool dims_from_theta(const sdk::Context& c, Dims& d);

// Binds every constant of `g` that carries its value (a model IR body's) and
// is not bound yet: a temp of its shape and dtype, the value row-major (one
// number fills the shape). model_ir.cpp.
void bind_valued_constants(sdk::Context& c, const ir::Graph& g, ir::Binding& b);

// The graph: declared x [B,D], y, eps [B,p]; constants ot_dirs [p,4],
// eye [p,p], c_half [1]; the body's parameters and constants; node outputs
// as documented above. Without training (d.training false) the decode
// segment and the parameters only it reads are left out.
// With prototypes (d.equations non-empty) the head segment ends
//   nn_logits  = relu(z U1 + d1) U2 + d2                 [B, C]
//   proto_sim  = cosine_similarity(z, np_protos)          [B, k]
//   proto_w    = softmax(proto_sim / np_tau)              [B, k]
//   sym_eq     = concat(eq_0(z), ..., eq_{k-1}(z))        [B, k]  (expr_ir.hpp)
//   sym_pred   = (proto_w * sym_eq) np_route              [B, C]
//   logits     = nn_logits + sym_pred * np_beta           [B, C]
// with constants np_protos [k,p], np_tau [1], np_route [k,C] (one-hot rows:
// route[i][eq_output[i]] = 1), np_beta [1], np_zeros [B,1] and each
// equation's constants sym<i>.c<j> [1] (prototype_constants()).
// Throws sdk::Error(EQUATION_INVALID) for an equation that does not parse.
ir::Graph build(const Dims& d);
// build(d), remembered: the graph is a pure function of the dimensions, and
// every operator of every step asks for the same one.
std::shared_ptr<const ir::Graph> built_graph(const Dims& d);

// The declared constant ids and values of the equations' constants, in
// declaration order (what the caller binds besides np_*).
std::vector<std::pair<std::string, double>> prototype_constants(const Dims& d);

// The loss terms, in the fixed order of III.C.
struct Term {
  const char* id;          // node output id
  const char* value;       // value name of the f64 copy ("loss.sup", ...)
  const char* weight_key;  // config key of its weight
  double default_weight;   // III.C default
};
const std::vector<Term>& loss_terms();

Task parse_task(const std::string& s);
const char* task_name(Task t);

}  // namespace umlos::model
