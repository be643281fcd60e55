// model_ops.hpp — what the files of libumlos_model.so share: the binding
// of an operator's graph segment (model_binding.cpp), the hashing and
// summation helpers, and the operators themselves, one file per family:
//   model_forward.cpp      InitParameters_v1, Encode_v1, Decode_v1,
//                          Forward_v2, TotalLoss_v1
//   model_update.cpp       Update_v1 (and the optimiser moments' layout)
//   model_contract.cpp     Contract.RestoredState, Contract.Validate_v1
//   model_fingerprint.cpp  StateFingerprint_v1, Fingerprint.Functional_v1
//   model.cpp              the descriptors and conformance vectors
#pragma once

#include <memory>
#include <mutex>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <umlos_philox.h>
#include <umlos_tmmu.h>
#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>
#include <umlos/sha256.hpp>

#include "engine.hpp"
#include "expr.hpp"
#include "graph.hpp"
#include "sharding.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {

// The SDK's SHA-256 (umlos/sha256.hpp) under the short names the
// fingerprints are written with; every value big-endian.
struct Sha : sdk::Sha256 {
  void bytes(const void* p, size_t n) { update(p, n); }
  void text(const std::string& s) { update(s); }
  void u64(uint64_t v) { update_u64_be(v); }
  void i64(int64_t v) { update_u64_be(static_cast<uint64_t>(v)); }
  void f64(double v) { update_f64_be(v); }
};

// The one element of a scalar value, as binary64.
double scalar_f64(const sdk::Context& c, const umlos_tensor* t);

// ------------------------------------------------------------ configuration (model_binding.cpp)

Dims dims_from(const sdk::Context& c, int64_t batch, int64_t features, int64_t outputs, int32_t dtype_override = -1);
int64_t num_outputs(const sdk::Context& c, Task task);
// Dims of the training graph from the current batch.
Dims training_dims(const sdk::Context& c);

// Constants, prototypes, parameters, the batch and earlier activations into
// a binding; one segment run (model_binding.cpp).
void bind_constants(sdk::Context& c, const Dims& d, ir::Binding& b);
void load_prototypes(const sdk::Context& c, Dims& d);
void bind_prototypes(sdk::Context& c, const Dims& d, ir::Binding& b);
void bind_parameters(sdk::Context& c, const Dims& d, ir::Binding& b);
void bind_batch(sdk::Context& c, ir::Binding& b, ir::Sharder* shard);
void bind_activations(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::set<std::string>& segments);
void run_segment(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::string& segment, ir::Sharder* shard);

// The graph of one operator's step and its binding: the batch, parameters
// and constants, the prototypes when `prototypes` (S_PROTO; Encode and
// Decode never read them), and the activations earlier operators of this
// iteration wrote for the `earlier` segments.
// In a multi-rank job (docs/distributed.md) the batch tensors x, y, eps
// (and the per-row constant np_zeros) are bound as this rank's rows, and
// `shard` runs the segments and the backward over the split batch; with
// one rank it is inactive and everything is as in one process.
struct Step {
  Dims d;
  std::shared_ptr<const ir::Graph> graph;  // build(d), shared with built_graph's cache
  ir::Binding b;
  std::unique_ptr<ir::Sharder> shard;
  const ir::Graph& g() const { return *graph; }
  ir::Sharder* sharder() const { return shard && shard->active() ? shard.get() : nullptr; }
};
Step bind_step(sdk::Context& c, bool prototypes, const std::set<std::string>& earlier);
// A model IR's graph checked once against the driver (Contract.Validate_v1
// of spec 002, backward mode: shapes, every primitive and the `_grad` of
// every node between a parameter and the loss), before its first step.
void check_model_graph(sdk::Context& c, const Dims& d);

// The optimiser moment opt.m.<id> / opt.v.<id> in the layout Update_v1
// writes (model_update.cpp).
std::vector<double> moment(const sdk::Context& c, const umlos_tensor* t, const std::string& name, const Param& p);

// ------------------------------------------------------------ the operators

void init_parameters(sdk::Context& c);
void encode(sdk::Context& c);
void decode(sdk::Context& c);
void forward_v2(sdk::Context& c);
void total_loss(sdk::Context& c);
void update(sdk::Context& c);
void restored_state(sdk::Context& c);
void validate(sdk::Context& c);
void state_fingerprint(sdk::Context& c);
void functional_fp(sdk::Context& c);

}  // namespace model_ops
