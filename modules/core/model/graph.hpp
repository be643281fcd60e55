// graph.hpp — the spec 004 model as one ModelIR graph, split into segments
// that the VI operators run one after the other (docs/model.md).
//
//   encode  x -> h -> (mu, logvar) -> z = mu + exp(logvar/2) * eps   (Encode_v1)
//   decode  z -> h -> sigmoid -> clamp[0,1] = recon                   (Decode_v1)
//   head    z -> h -> nn_logits = logits                              (Forward_v2)
//   loss    L_sup, L_rec, L_KL, L_OT, L_covz                          (TotalLoss_v1)
//
// Backward (Update_v1) runs once over the whole graph, seeded with the
// manifest's loss weights, so the five terms never need a summing node.
#pragma once

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
};

struct Param {
  std::string id;  // graph id, e.g. "enc.W1"; value "theta.<id>"
  sdk::Shape shape;
  int64_t fan_in = 0, fan_out = 0;  // 0 fan_in: a bias (initialised to 0)
};

// Parameters in registration order (optimiser state and gradients follow it).
std::vector<Param> parameters(const Dims& d);

// The graph: declared x [B,D], y, eps [B,p]; constants ot_dirs [p,4],
// eye [p,p], c_half [1]; parameters; node outputs as documented above.
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
