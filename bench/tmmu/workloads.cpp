// workloads.cpp — see workloads.hpp for the execution model.
#include "workloads.hpp"

#include <algorithm>
#include <random>
#include <vector>

namespace umlos::bench {
namespace {

constexpr uint64_t kF32 = 4;

// A forward op graph: each op reads tensors (by index) and writes one.
struct Graph {
  struct Tensor {
    std::string name;
    uint64_t bytes;
    int producer = -1;           // op index; -1 = graph input
    bool view_of_input = false;  // reshape/split views share their input's storage
  };
  struct Op {
    std::vector<int> inputs;
    int output = -1;
    uint64_t weight_bytes = 0;  // parameters of this op (0: none)
  };
  std::vector<Tensor> tensors;
  std::vector<Op> ops;

  int input(const std::string& name, uint64_t bytes) {
    tensors.push_back({name, bytes, -1, false});
    return static_cast<int>(tensors.size()) - 1;
  }
  int op(const std::string& name, std::vector<int> in, uint64_t out_bytes, uint64_t weight_bytes = 0,
         bool view = false) {
    tensors.push_back({name, out_bytes, static_cast<int>(ops.size()), view});
    ops.push_back({std::move(in), static_cast<int>(tensors.size()) - 1, weight_bytes});
    return static_cast<int>(tensors.size()) - 1;
  }
};

// Appends the graph's intervals (shifted by `base` steps, ids prefixed).
void emit(const Graph& g, bool train, int64_t base, const std::string& prefix, plan::IntervalSet& set, bool emit_params,
          uint64_t& alias_counter) {
  const int64_t K = static_cast<int64_t>(g.ops.size());
  std::vector<int64_t> last_fwd(g.tensors.size(), -1), last_bwd(g.tensors.size(), -1);
  for (int64_t k = 0; k < K; ++k)
    for (int t : g.ops[k].inputs) {
      last_fwd[t] = std::max(last_fwd[t], k);
      last_bwd[t] = std::max(last_bwd[t], 2 * K - 1 - k);  // backward of op k needs its inputs
    }
  // Views share their input's storage: one alias group per chain.
  std::vector<uint64_t> group(g.tensors.size(), 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (!g.tensors[t].view_of_input) continue;
    const int src = g.ops[g.tensors[t].producer].inputs[0];
    if (group[src] == 0) group[src] = ++alias_counter;
    group[t] = group[src];
  }
  auto add = [&](const std::string& id, uint32_t arena, uint64_t bytes, int64_t b, int64_t e, uint64_t alias,
                 bool saved) {
    plan::TensorSpec s;
    s.id = prefix + id;
    s.arena = arena;
    s.size = s.actual_size = bytes;
    s.begin = base + b;
    s.end = base + e;
    s.alias_group = alias;
    if (saved) s.flags |= UMLOS_PLAN_SAVED_FOR_BACKWARD;
    set.tensors.push_back(std::move(s));
  };
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Graph::Tensor& x = g.tensors[t];
    const int64_t born = x.producer < 0 ? 0 : x.producer;
    int64_t dies = std::max(born, last_fwd[t]);
    if (last_fwd[t] < 0) dies = train ? K - 1 : K - 1;  // outputs live to the end of forward
    const bool saved = train && last_bwd[t] >= 0;
    if (saved) dies = std::max(dies, last_bwd[t]);
    add(x.name, 1, x.bytes, born, dies, group[t], saved);
    if (train && x.producer >= 0) {
      // d(x): from the backward of its last consumer to the backward of its producer.
      const int64_t from = last_fwd[t] < 0 ? K : 2 * K - 1 - last_fwd[t];
      const int64_t to = 2 * K - 1 - x.producer;
      add("d_" + x.name, 2, x.bytes, std::min(from, to), to, 0, false);
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    const uint64_t w = g.ops[k].weight_bytes;
    if (w == 0) continue;
    const std::string& name = g.tensors[g.ops[k].output].name;
    if (emit_params) add("w_" + name, 0, w, 0, 0, 0, false);
    if (train) add("dw_" + name, 2, w, 2 * K - 1 - k, 2 * K, 0, false);
  }
}

plan::IntervalSet new_set(const std::string& name, bool train) {
  plan::IntervalSet s;
  s.source = name;
  s.name = name;
  s.mode = train ? "backward" : "inference";
  s.arenas = {{"parameters", 128, 0, true}, {"activations", 128, 0, false}, {"gradients", 128, 0, false}};
  return s;
}

void finish(plan::IntervalSet& s) {
  std::sort(s.tensors.begin(), s.tensors.end(),
            [](const plan::TensorSpec& a, const plan::TensorSpec& b) { return a.id < b.id; });
}

std::string idx(const char* p, int a, int b = -1) {
  char buf[64];
  if (b < 0)
    std::snprintf(buf, sizeof buf, "%s%02d", p, a);
  else
    std::snprintf(buf, sizeof buf, "%s%02d_%02d", p, a, b);
  return buf;
}

// ResNet-50 v1.5 (He et al. 2016, Table 1): conv1 7x7/2 64, maxpool,
// bottleneck stages [3, 4, 6, 3] with widths 64/128/256/512 (x4 out),
// spatial 56/28/14/7, global pool, fc 1000. BN and ReLU as separate ops.
void build_resnet50(Graph& g, uint64_t N, const std::string& p) {
  auto act = [&](uint64_t c, uint64_t hw) { return N * c * hw * hw * kF32; };
  int x = g.input(p + "image", act(3, 224));
  x = g.op(p + "conv1", {x}, act(64, 112), 64 * 3 * 49 * kF32);
  x = g.op(p + "bn1", {x}, act(64, 112), 2 * 64 * kF32);
  x = g.op(p + "relu1", {x}, act(64, 112));
  x = g.op(p + "maxpool", {x}, act(64, 56));
  const int blocks[4] = {3, 4, 6, 3};
  const uint64_t width[4] = {64, 128, 256, 512}, hw[4] = {56, 28, 14, 7};
  uint64_t cin = 64;
  for (int s = 0; s < 4; ++s) {
    for (int b = 0; b < blocks[s]; ++b) {
      const uint64_t w = width[s], cout = 4 * w, h = hw[s];
      const uint64_t hin = (b == 0 && s > 0) ? hw[s - 1] : h;
      const std::string n = idx((p + "s").c_str(), s + 1, b);
      int y = g.op(n + "_conv_a", {x}, act(w, hin), cin * w * kF32);
      y = g.op(n + "_bn_a", {y}, act(w, hin), 2 * w * kF32);
      y = g.op(n + "_relu_a", {y}, act(w, hin));
      y = g.op(n + "_conv_b", {y}, act(w, h), w * w * 9 * kF32);  // stride 2 in the first block of stages 2-4
      y = g.op(n + "_bn_b", {y}, act(w, h), 2 * w * kF32);
      y = g.op(n + "_relu_b", {y}, act(w, h));
      y = g.op(n + "_conv_c", {y}, act(cout, h), w * cout * kF32);
      y = g.op(n + "_bn_c", {y}, act(cout, h), 2 * cout * kF32);
      int skip = x;
      if (b == 0) {
        skip = g.op(n + "_down", {x}, act(cout, h), cin * cout * kF32);
        skip = g.op(n + "_down_bn", {skip}, act(cout, h), 2 * cout * kF32);
      }
      y = g.op(n + "_add", {y, skip}, act(cout, h));
      x = g.op(n + "_relu", {y}, act(cout, h));
      cin = cout;
    }
  }
  x = g.op(p + "avgpool", {x}, N * 2048 * kF32);
  x = g.op(p + "flatten", {x}, N * 2048 * kF32, 0, true);
  x = g.op(p + "fc", {x}, N * 1000 * kF32, (2048 * 1000 + 1000) * kF32);
  g.op(p + "softmax", {x}, N * 1000 * kF32);
}

// One pre-LN transformer block (GPT-2 / BERT shapes).
int transformer_block(Graph& g, int x, uint64_t N, uint64_t T, uint64_t d, uint64_t heads, uint64_t ffn,
                      const std::string& n) {
  const uint64_t tok = N * T * kF32;
  int h = g.op(n + "_ln1", {x}, tok * d, 2 * d * kF32);
  int qkv = g.op(n + "_qkv", {h}, tok * 3 * d, (d * 3 * d + 3 * d) * kF32);
  int q = g.op(n + "_q", {qkv}, tok * d, 0, true);  // views of qkv
  int k = g.op(n + "_k", {qkv}, tok * d, 0, true);
  int v = g.op(n + "_v", {qkv}, tok * d, 0, true);
  int s = g.op(n + "_scores", {q, k}, N * heads * T * T * kF32);
  int pr = g.op(n + "_softmax", {s}, N * heads * T * T * kF32);
  int a = g.op(n + "_attn", {pr, v}, tok * d);
  int o = g.op(n + "_proj", {a}, tok * d, (d * d + d) * kF32);
  int r = g.op(n + "_res1", {x, o}, tok * d);
  int h2 = g.op(n + "_ln2", {r}, tok * d, 2 * d * kF32);
  int f = g.op(n + "_fc", {h2}, tok * ffn, (d * ffn + ffn) * kF32);
  int ge = g.op(n + "_gelu", {f}, tok * ffn);
  int f2 = g.op(n + "_fc2", {ge}, tok * d, (ffn * d + d) * kF32);
  return g.op(n + "_res2", {r, f2}, tok * d);
}

void build_transformer(Graph& g, uint64_t N, uint64_t T, uint64_t vocab, uint64_t positions, bool causal_lm,
                       const std::string& p) {
  const uint64_t d = 768, heads = 12, ffn = 3072, layers = 12;
  int ids = g.input(p + "tokens", N * T * 8);
  int e = g.op(p + "embed", {ids}, N * T * d * kF32, (vocab * d + positions * d) * kF32);
  int x = e;
  for (uint64_t l = 0; l < layers; ++l)
    x = transformer_block(g, x, N, T, d, heads, ffn, idx((p + "h").c_str(), (int)l));
  x = g.op(p + "ln_f", {x}, N * T * d * kF32, 2 * d * kF32);
  if (causal_lm) {
    x = g.op(p + "lm_head", {x}, N * T * vocab * kF32);  // tied to the embedding: no new weights
  } else {
    x = g.op(p + "mlm_dense", {x}, N * T * d * kF32, (d * d + d) * kF32);
    x = g.op(p + "mlm_logits", {x}, N * T * vocab * kF32, vocab * kF32);
  }
  g.op(p + "loss", {x}, N * T * kF32);
}

// The interval set of one graph built as a whole, named `name` plus its mode.
plan::IntervalSet graph_set(const Graph& g, const std::string& name, bool train) {
  plan::IntervalSet s = new_set(name + (train ? "_train" : "_infer"), train);
  uint64_t alias = 0;
  emit(g, train, 0, "", s, true, alias);
  finish(s);
  return s;
}

}  // namespace

plan::IntervalSet resnet50(uint64_t batch, bool train) {
  Graph g;
  build_resnet50(g, batch, "");
  return graph_set(g, "resnet50_b" + std::to_string(batch), train);
}

plan::IntervalSet gpt2_small(uint64_t batch, uint64_t seq, bool train) {
  Graph g;
  build_transformer(g, batch, seq, 50257, 1024, true, "");
  return graph_set(g, "gpt2_small_b" + std::to_string(batch) + "_t" + std::to_string(seq), train);
}

plan::IntervalSet bert_base(uint64_t batch, uint64_t seq, bool train) {
  Graph g;
  build_transformer(g, batch, seq, 30522, 512, false, "");
  return graph_set(g, "bert_base_b" + std::to_string(batch) + "_t" + std::to_string(seq), train);
}

plan::IntervalSet mixed_workload(uint64_t n_tensors, uint64_t seed, uint64_t period, int64_t overlap) {
  std::mt19937_64 rng(seed);  // fully specified by the standard: same stream everywhere
  std::string name = "mixed_" + std::to_string(n_tensors) + "_s" + std::to_string(seed);
  if (period != 0 || overlap != 3) name += "_p" + std::to_string(period) + "_o" + std::to_string(overlap);
  plan::IntervalSet s = new_set(name, true);
  int64_t base = 0;
  uint64_t alias = 0;
  for (int m = 0; s.tensors.size() < n_tensors; ++m) {
    // Periodic: micro-batch m repeats the shapes (and start gap) of
    // micro-batch m mod period, like a training step of fixed bucketed
    // shapes run again and again.
    if (period != 0) rng.seed(seed * 1000003u + static_cast<uint64_t>(m) % period);
    // A micro-batch: 1..8 images of 32..128 px through 3 CNN stages, then
    // 2..4 transformer blocks over the resulting tokens.
    const uint64_t N = 1 + rng() % 8;
    const uint64_t px = 32u << (rng() % 3);
    Graph g;
    const std::string p = "m" + std::to_string(m) + "_";
    int x = g.input(p + "img", N * 3 * px * px * kF32);
    uint64_t c = 32, hw = px / 2;
    x = g.op(p + "stem", {x}, N * c * hw * hw * kF32, 3 * c * 9 * kF32);
    for (int st = 0; st < 3; ++st) {
      const int blocks = 1 + static_cast<int>(rng() % 3);
      for (int b = 0; b < blocks; ++b) {
        const std::string n = p + "c" + std::to_string(st) + "_" + std::to_string(b);
        int y = g.op(n + "_a", {x}, N * c * hw * hw * kF32, c * c * 9 * kF32);
        y = g.op(n + "_bn", {y}, N * c * hw * hw * kF32, 2 * c * kF32);
        y = g.op(n + "_relu", {y}, N * c * hw * hw * kF32);
        y = g.op(n + "_b", {y}, N * c * hw * hw * kF32, c * c * 9 * kF32);
        x = g.op(n + "_add", {x, y}, N * c * hw * hw * kF32);
      }
      x = g.op(p + "down" + std::to_string(st), {x}, N * 2 * c * (hw / 2) * (hw / 2) * kF32, c * 2 * c * 9 * kF32);
      c *= 2;
      hw /= 2;
    }
    const uint64_t T = hw * hw, d = c;  // tokens = final feature map positions
    x = g.op(p + "tokens", {x}, N * T * d * kF32, 0, true);
    const int blocks = 2 + static_cast<int>(rng() % 3);
    for (int b = 0; b < blocks; ++b) x = transformer_block(g, x, N, T, d, 4, 4 * d, p + "t" + std::to_string(b));
    g.op(p + "head", {x}, N * 10 * kF32, d * 10 * kF32);
    emit(g, true, base, p, s, false, alias);
    // Later micro-batches start while this one is still in flight
    // (pipelined: about four overlap at any step with overlap = 3).
    const int64_t K = static_cast<int64_t>(g.ops.size());
    base += K / overlap + static_cast<int64_t>(rng() % static_cast<uint64_t>(K / overlap + 1));
  }
  finish(s);
  return s;
}

}  // namespace umlos::bench
