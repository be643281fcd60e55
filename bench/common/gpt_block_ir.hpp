// gpt_block_ir.hpp — the ModelIR text of one GPT-2-shaped transformer
// block (pre-norm, q/k/v, scaled softmax attention without mask, output
// projection, residual, layer_norm, GELU MLP, residual, mse against a
// target): examples/ir/transformer_block.yaml at any size. Shared by
// bench/executor and bench/cuda_driver so both time the same graph.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace umlos_bench {

// T tokens of width D, H heads, FFN width FF; dtype "f32" or "f64".
inline std::string gpt_ir(const char* dtype, int T, int D, int H, int FF) {
  const int dh = D / H;
  std::ostringstream o;
  auto s2 = [](int a, int b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  auto s3 = [](int a, int b, int c) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + "]";
  };
  o << "dtype: " << dtype << "\ntensors:\n"
    << "  - {id: x, role: input, shape: " << s2(T, D) << "}\n"
    << "  - {id: target, role: input, shape: " << s2(T, D) << "}\n"
    << "  - {id: scale, role: constant, shape: [], value: " << 1.0 / std::sqrt(static_cast<double>(dh)) << "}\n";
  for (const char* p : {"ln1_g", "ln1_b", "ln2_g", "ln2_b", "b2"})
    o << "  - {id: " << p << ", role: parameter, shape: [" << D << "]}\n";
  for (const char* p : {"Wq", "Wk", "Wv", "Wo"})
    o << "  - {id: " << p << ", role: parameter, shape: " << s2(D, D) << "}\n";
  o << "  - {id: W1, role: parameter, shape: " << s2(D, FF) << "}\n  - {id: b1, role: parameter, shape: [" << FF
    << "]}\n  - {id: W2, role: parameter, shape: " << s2(FF, D) << "}\nnodes:\n";
  int id = 0;
  auto node = [&](const std::string& instr, const std::string& ins, const std::string& out, const std::string& shape,
                  const std::string& attrs = "") {
    o << "  - {node_id: " << id++ << ", instr: " << instr << ", inputs: [" << ins << "], "
      << (attrs.empty() ? "" : "attrs: {" + attrs + "}, ") << "output: {id: " << out << ", shape: " << shape << "}}\n";
  };
  node("layer_norm", "x, ln1_g, ln1_b", "h", s2(T, D));
  for (const char* p : {"q", "k", "v"}) {
    const std::string n = p;
    node("matmul", "h, W" + n, n, s2(T, D));
    node("reshape", n, n + "_h", s3(T, H, dh));
    node("transpose", n + "_h", n + "_t", s3(H, T, dh), "perm: \"1,0,2\"");
  }
  node("matmul", "q_t, k_t", "scores", s3(H, T, T), "trans_b: 1");
  node("mul", "scores, scale", "scaled", s3(H, T, T));
  node("softmax", "scaled", "attn", s3(H, T, T));
  node("matmul", "attn, v_t", "ctx_t", s3(H, T, dh));
  node("transpose", "ctx_t", "ctx_h", s3(T, H, dh), "perm: \"1,0,2\"");
  node("reshape", "ctx_h", "ctx", s2(T, D));
  node("matmul", "ctx, Wo", "proj", s2(T, D));
  node("add", "x, proj", "r1", s2(T, D));
  node("layer_norm", "r1, ln2_g, ln2_b", "h2", s2(T, D));
  node("matmul", "h2, W1", "f1", s2(T, FF));
  node("bias_add", "f1, b1", "f1b", s2(T, FF));
  node("gelu", "f1b", "g", s2(T, FF));
  node("matmul", "g, W2", "f2", s2(T, D));
  node("bias_add", "f2, b2", "f2b", s2(T, D));
  node("add", "r1, f2b", "y", s2(T, D));
  node("mse", "y, target", "loss", "[]");
  o << "outputs: [loss]\nloss: loss\n";
  return o.str();
}

}  // namespace umlos_bench
