// expr_ir.cpp — see expr_ir.hpp.
#include "expr_ir.hpp"

namespace umlos::symbolic {

namespace ir = umlos::modelir;

namespace {

struct Emitter {
  ir::Graph& g;
  int64_t& next_id;
  const std::string& segment;
  const std::string& z;
  int64_t B;
  const std::string& prefix;
  const std::string& role;
  Compiled out;
  int64_t tmp = 0;

  std::string fresh() { return prefix + "t" + std::to_string(tmp++); }
  std::string node(const std::string& instr, std::vector<std::string> inputs, const sdk::Shape& shape,
                   std::vector<ir::NodeAttr> attrs = {}) {
    ir::Node n;
    n.node_id = next_id++;
    n.instr = instr;
    n.inputs = std::move(inputs);
    n.output = fresh();
    n.output_shape = shape;
    n.dtype = g.dtype;
    n.attrs = std::move(attrs);
    n.segment = segment;
    g.nodes.push_back(std::move(n));
    return g.nodes.back().output;
  }
  // Returns (id, is_scalar [1]).
  std::pair<std::string, bool> emit(const Expr& e) {
    const sdk::Shape col = {B, 1}, one = {1};
    switch (e.op) {
      case Op::Const: {
        const std::string id = prefix + "c" + std::to_string(out.constant_ids.size());
        g.declared.push_back({id, role, one, g.dtype});
        out.constant_ids.push_back(id);
        out.constant_values.push_back(e.value);
        return {id, true};
      }
      case Op::Var:
        return {node("slice", {z}, col,
                     {ir::NodeAttr::integer("axis", 1), ir::NodeAttr::integer("start", e.var),
                      ir::NodeAttr::integer("length", 1)}),
                false};
      case Op::Add:
      case Op::Mul: {
        auto acc = emit(e.args[0]);
        for (size_t k = 1; k < e.args.size(); ++k) {
          auto r = emit(e.args[k]);
          const bool s = acc.second && r.second;
          acc = {node(e.op == Op::Add ? "add" : "mul", {acc.first, r.first}, s ? one : col), s};
        }
        return acc;
      }
      case Op::Div: {
        auto a = emit(e.args[0]);
        auto b = emit(e.args[1]);
        const std::string den = node("clamp", {b.first}, b.second ? one : col, {ir::NodeAttr::real("lo", kEpsDenom)});
        const bool s = a.second && b.second;
        return {node("div", {a.first, den}, s ? one : col), s};
      }
      case Op::Exp: {
        auto a = emit(e.args[0]);
        const sdk::Shape sh = a.second ? one : col;
        const std::string c =
            node("clamp", {a.first}, sh, {ir::NodeAttr::real("lo", kExpLo), ir::NodeAttr::real("hi", kExpHi)});
        return {node("exp", {c}, sh), a.second};
      }
      case Op::Log: {
        auto a = emit(e.args[0]);
        const sdk::Shape sh = a.second ? one : col;
        const std::string c = node("clamp", {a.first}, sh, {ir::NodeAttr::real("lo", kEpsDenom)});
        return {node("log", {c}, sh), a.second};
      }
      case Op::Sin:
      case Op::Cos: {
        auto a = emit(e.args[0]);
        return {node(e.op == Op::Sin ? "sin" : "cos", {a.first}, a.second ? one : col), a.second};
      }
    }
    return {"", false};
  }
};

}  // namespace

Compiled compile(const Expr& e, ir::Graph& g, int64_t& next_id, const std::string& segment, const std::string& z,
                 const std::string& zeros, int64_t B, const std::string& prefix, const std::string& const_role) {
  Emitter em{g, next_id, segment, z, B, prefix, const_role, {}, 0};
  auto r = em.emit(e);
  if (r.second) r.first = em.node("add", {zeros, r.first}, {B, 1});
  em.out.output = r.first;
  return em.out;
}

}  // namespace umlos::symbolic
