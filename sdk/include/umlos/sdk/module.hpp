// umlos/sdk/module.hpp — part of the module SDK (umlos/sdk.hpp includes
// every part; include that): Module: the builder of the module descriptor and the entry point behind UMLOS_SDK_MODULE.
#ifndef UMLOS_SDK_MODULE_HPP_
#define UMLOS_SDK_MODULE_HPP_

#include "umlos/sdk/declarations.hpp"

namespace umlos {
namespace sdk {

// ------------------------------------------------------------------ Module

// What a module offers. Build it with add()/invariant()/strategy()/driver()
// and return it from the function named in UMLOS_SDK_MODULE. All descriptors
// live in one heap block owned by the Module (moving the Module keeps every
// address); desc() seals it: after that nothing may be added.
class Module {
 public:
  Module(std::string name, std::string version) : s_(std::make_unique<Storage>()) {
    s_->name = std::move(name);
    s_->version = std::move(version);
    if (s_->name.empty()) throw DeclarationError("module name is empty");
  }
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Adds an operator; its declaration is validated here (DeclarationError).
  Module&& add(Operator op) && {
    add_operator(std::move(op));
    return std::move(*this);
  }
  Module& add(Operator op) & {
    add_operator(std::move(op));
    return *this;
  }

  // Registers an invariant check run at `point` (spec 004 I.E). The body
  // returns UMLOS_CONTRACT_VIOLATION via fail() with a counterexample.
  template <class F>
  Module&& invariant(std::string name, int32_t point, F body) && {
    add_invariant(std::move(name), point, Operator("").run(std::move(body)).body_);
    return std::move(*this);
  }
  template <class F>
  Module& invariant(std::string name, int32_t point, F body) & {
    add_invariant(std::move(name), point, Operator("").run(std::move(body)).body_);
    return *this;
  }

  // Registers a TMMU strategy whose plan is the function `Plan`:
  //   void plan(sdk::Context&, const umlos_plan_request&, umlos_plan_result&)
  //   module.strategy<plan>("Vendor.TMMU.Greedy_v1", "greedy first fit");
  template <auto Plan>
  Module&& strategy(std::string name, std::string summary = {}) && {
    add_strategy(std::move(name), std::move(summary), &detail::plan_trampoline<Plan>);
    return std::move(*this);
  }
  template <auto Plan>
  Module& strategy(std::string name, std::string summary = {}) & {
    add_strategy(std::move(name), std::move(summary), &detail::plan_trampoline<Plan>);
    return *this;
  }

  // Offers a driver written against umlos_driver.h directly. The descriptor
  // is the module's own static object (it must outlive the process); wrap
  // its functions' bodies in sdk::guard().
  Module&& driver(const umlos_driver_desc& d) && {
    check_open();
    s_->drivers.push_back(&d);
    return std::move(*this);
  }
  Module& driver(const umlos_driver_desc& d) & {
    check_open();
    s_->drivers.push_back(&d);
    return *this;
  }

  // Offers a primitive (ABI 1.6) written against umlos_abi.h directly: a
  // static umlos_primitive_desc whose function runs on host copies of the
  // operands for any driver that lacks the name (docs/sdk.md). Wrap the
  // function's body in sdk::guard(). Its gradient is another primitive,
  // "<name>_grad".
  Module&& primitive(const umlos_primitive_desc& d) && {
    check_open();
    claim_name("primitive", d.name ? d.name : "");
    s_->primitives.push_back(&d);
    return std::move(*this);
  }
  Module& primitive(const umlos_primitive_desc& d) & {
    check_open();
    claim_name("primitive", d.name ? d.name : "");
    s_->primitives.push_back(&d);
    return *this;
  }

  // The descriptor: built once, stable for the lifetime of this Module (for
  // the module's lifetime when held by UMLOS_SDK_MODULE).
  const umlos_module_desc* desc() {
    if (!s_->sealed) seal();
    return &s_->module;
  }

 private:
  struct OperatorStorage {
    umlos_operator_desc desc{};
    std::vector<umlos_value_decl> inputs, outputs;
    std::vector<umlos_test_vector> tests;
    detail::BodyRecord record;
  };
  struct TestStorage {
    std::vector<umlos_tensor_data> inputs, expected;
    std::vector<umlos_attr> config;
  };
  // Everything the kernel can point into. deque: push_back never moves
  // existing elements, so addresses taken while building stay valid.
  struct Storage {
    std::string name, version;
    std::deque<std::string> strings;
    std::deque<std::vector<uint8_t>> blobs;
    std::deque<std::vector<int64_t>> dims;
    std::deque<OperatorStorage> operators;
    std::deque<TestStorage> tests;
    std::deque<umlos_invariant_desc> invariants;
    std::deque<detail::BodyRecord> invariant_records;
    std::deque<umlos_tmmu_strategy_desc> strategies;
    std::vector<const umlos_operator_desc*> operator_ptrs;
    std::vector<const umlos_invariant_desc*> invariant_ptrs;
    std::vector<const umlos_tmmu_strategy_desc*> strategy_ptrs;
    std::vector<const umlos_driver_desc*> drivers;
    std::vector<const umlos_primitive_desc*> primitives;
    std::vector<std::string> all_names;  // for duplicate detection
    umlos_module_desc module{};
    bool sealed = false;
  };

  void check_open() const {
    if (s_->sealed) throw DeclarationError("module \"" + s_->name + "\": add after desc() (descriptor is sealed)");
  }
  const char* intern(std::string s) {
    s_->strings.push_back(std::move(s));
    return s_->strings.back().c_str();
  }
  void claim_name(const std::string& kind, const std::string& name) {
    if (name.empty()) throw DeclarationError("module \"" + s_->name + "\": " + kind + " with an empty name");
    for (const std::string& n : s_->all_names)
      if (n == name)
        throw DeclarationError("module \"" + s_->name + "\": " + kind + " \"" + name + "\" declared twice");
    s_->all_names.push_back(name);
  }

  void add_operator(Operator op) {
    check_open();
    const std::string where = "operator \"" + op.name_ + "\"";
    claim_name("operator", op.name_);
    if (op.purity_ != UMLOS_PURE && op.purity_ != UMLOS_STATEFUL && op.purity_ != UMLOS_IO)
      throw DeclarationError(where + ": purity not declared (call .pure(), .stateful() or .io())");
    if (op.rng_stream_ < UMLOS_STREAM_NONE || op.rng_stream_ >= UMLOS_STREAM_COUNT)
      throw DeclarationError(cat(where, ": RNG stream ", op.rng_stream_, " does not exist"));
    if ((op.rng_stream_ == UMLOS_STREAM_NONE) != (op.rng_draws_ == 0))
      throw DeclarationError(cat(where, ": RNG declaration \"exactly ", op.rng_draws_, " draws from stream ",
                                 stream_name(op.rng_stream_), "\" is inconsistent (stream none iff 0 draws)"));
    if (!op.body_) throw DeclarationError(where + ": no body (call .run(...))");

    s_->operators.emplace_back();
    OperatorStorage& o = s_->operators.back();
    o.inputs = declare_values(where, op.inputs_);
    o.outputs = declare_values(where, op.outputs_);
    if (o.outputs.empty() && op.purity_ == UMLOS_PURE)
      throw DeclarationError(where + ": a PURE operator without outputs does nothing");
    for (const TestVector& t : op.tests_) o.tests.push_back(declare_test(where, op, t));
    o.record.body = std::move(op.body_);

    umlos_operator_desc& d = o.desc;
    d.struct_size = sizeof(umlos_operator_desc);
    d.name = intern(op.name_);
    d.summary = op.summary_.empty() ? nullptr : intern(op.summary_);
    d.purity = op.purity_;
    d.rng_stream = op.rng_stream_;
    d.rng_draws = op.rng_draws_;
    d.n_inputs = static_cast<uint32_t>(o.inputs.size());
    d.inputs = o.inputs.empty() ? nullptr : o.inputs.data();
    d.n_outputs = static_cast<uint32_t>(o.outputs.size());
    d.outputs = o.outputs.empty() ? nullptr : o.outputs.data();
    d.n_test_vectors = static_cast<uint32_t>(o.tests.size());
    d.test_vectors = o.tests.empty() ? nullptr : o.tests.data();
    d.run = &detail::body_trampoline;
    d.user_data = &o.record;
  }

  std::vector<umlos_value_decl> declare_values(const std::string& where, const std::vector<Operator::Value>& values) {
    std::vector<umlos_value_decl> out;
    for (const Operator::Value& v : values) {
      if (v.name.empty()) throw DeclarationError(where + ": a value with an empty name");
      for (const umlos_value_decl& prev : out)
        if (v.name == prev.name) throw DeclarationError(where + ": value \"" + v.name + "\" declared twice");
      if (v.dtype != UMLOS_DTYPE_ANY && dtype_size(v.dtype) == 0)
        throw DeclarationError(cat(where, ": value \"", v.name, "\" has dtype ", v.dtype, ", not a umlos_dtype"));
      umlos_value_decl d{};
      d.name = intern(v.name);
      d.dtype = v.dtype;
      d.flags = v.flags;
      if (!v.dims) {
        d.rank = UMLOS_RANK_ANY;
      } else {
        if (v.dims->size() > UMLOS_MAX_RANK)
          throw DeclarationError(
              cat(where, ": value \"", v.name, "\" has rank ", v.dims->size(), " > ", UMLOS_MAX_RANK));
        d.rank = static_cast<uint32_t>(v.dims->size());
        for (size_t i = 0; i < v.dims->size(); ++i) {
          const int64_t e = (*v.dims)[i];
          if (e < 0 && e != UMLOS_DIM_ANY)
            throw DeclarationError(cat(where, ": value \"", v.name, "\" has extent ", e));
          d.dims[i] = e;
        }
      }
      out.push_back(d);
    }
    return out;
  }

  umlos_tensor_data declare_tensor(const TestVector::Tensor& t) {
    umlos_tensor_data d{};
    d.name = intern(t.name);
    d.dtype = t.dtype;
    d.rank = static_cast<uint32_t>(t.shape.size());
    if (!t.shape.empty()) {
      s_->dims.push_back(t.shape);
      d.dims = s_->dims.back().data();
    }
    s_->blobs.push_back(t.bytes);
    d.data = s_->blobs.back().empty() ? nullptr : s_->blobs.back().data();
    d.bytes = s_->blobs.back().size();
    return d;
  }

  umlos_test_vector declare_test(const std::string& where, const Operator& op, const TestVector& t) {
    const std::string tw = where + ", test vector \"" + t.name_ + "\"";
    if (t.name_.empty()) throw DeclarationError(where + ": a test vector with an empty name");
    // Exact names, or a family "prefix.*" (ABI 1.2) covering the name.
    auto declared = [](const std::vector<Operator::Value>& list, const std::string& name) {
      for (const Operator::Value& v : list) {
        if (v.name == name) return true;
        const size_t n = v.name.size();
        if (n >= 2 && v.name.compare(n - 2, 2, ".*") == 0 && name.size() > n - 1 &&
            name.compare(0, n - 1, v.name, 0, n - 1) == 0)
          return true;
      }
      return false;
    };
    for (const TestVector::Tensor& x : t.inputs_)
      if (!declared(op.inputs_, x.name))
        throw DeclarationError(tw + ": input \"" + x.name + "\" is not a declared input");
    // An INOUT input is updated in place, so its final value is checkable too.
    auto inout = [&](const std::string& name) {
      for (const Operator::Value& v : op.inputs_)
        if (v.name == name && (v.flags & UMLOS_VALUE_INOUT)) return true;
      return false;
    };
    for (const TestVector::Tensor& x : t.expected_)
      if (!declared(op.outputs_, x.name) && !inout(x.name))
        throw DeclarationError(tw + ": expected \"" + x.name + "\" is neither a declared output nor an INOUT input");
    if (t.rel_ < 0 || t.abs_ < 0 || std::isnan(t.rel_) || std::isnan(t.abs_))
      throw DeclarationError(tw + ": tolerances must be >= 0");

    s_->tests.emplace_back();
    TestStorage& ts = s_->tests.back();
    for (const TestVector::Tensor& x : t.inputs_) ts.inputs.push_back(declare_tensor(x));
    for (const TestVector::Tensor& x : t.expected_) ts.expected.push_back(declare_tensor(x));
    for (const TestVector::ConfigEntry& c : t.config_) {
      umlos_attr a{};
      a.key = intern(c.key);
      a.kind = c.kind;
      a.i = c.i;
      a.f = c.f;
      a.s = c.kind == UMLOS_ATTR_STRING ? intern(c.s) : nullptr;
      ts.config.push_back(a);
    }
    umlos_test_vector v{};
    v.struct_size = sizeof(umlos_test_vector);
    v.name = intern(t.name_);
    v.inputs = ts.inputs.empty() ? nullptr : ts.inputs.data();
    v.n_inputs = static_cast<uint32_t>(ts.inputs.size());
    v.expected = ts.expected.empty() ? nullptr : ts.expected.data();
    v.n_expected = static_cast<uint32_t>(ts.expected.size());
    v.rel_tolerance = t.rel_;
    v.abs_tolerance = t.abs_;
    v.config = ts.config.empty() ? nullptr : ts.config.data();
    v.n_config = static_cast<uint32_t>(ts.config.size());
    v.seed = t.seed_;
    return v;
  }

  void add_invariant(std::string name, int32_t point, Body body) {
    check_open();
    claim_name("invariant", name);
    if (point != UMLOS_CHECK_AFTER_LOSS && point != UMLOS_CHECK_AFTER_ACTION && point != UMLOS_CHECK_AFTER_RESTORE)
      throw DeclarationError(cat("invariant \"", name, "\": check point ", point, " does not exist"));
    s_->invariant_records.push_back(detail::BodyRecord{std::move(body)});
    umlos_invariant_desc d{};
    d.struct_size = sizeof(umlos_invariant_desc);
    d.name = intern(std::move(name));
    d.point = point;
    d.check = &detail::body_trampoline;
    d.user_data = &s_->invariant_records.back();
    s_->invariants.push_back(d);
  }

  void add_strategy(std::string name, std::string summary,
                    umlos_status (*plan)(const umlos_services*, umlos_ctx*, const umlos_plan_request*,
                                         umlos_plan_result*)) {
    check_open();
    claim_name("strategy", name);
    umlos_tmmu_strategy_desc d{};
    d.struct_size = sizeof(umlos_tmmu_strategy_desc);
    d.name = intern(std::move(name));
    d.summary = summary.empty() ? nullptr : intern(std::move(summary));
    d.plan = plan;
    s_->strategies.push_back(d);
  }

  void seal() {
    Storage& s = *s_;
    for (const OperatorStorage& o : s.operators) s.operator_ptrs.push_back(&o.desc);
    for (const umlos_invariant_desc& i : s.invariants) s.invariant_ptrs.push_back(&i);
    for (const umlos_tmmu_strategy_desc& t : s.strategies) s.strategy_ptrs.push_back(&t);
    umlos_module_desc& m = s.module;
    m.struct_size = sizeof(umlos_module_desc);
    m.abi_major = UMLOS_ABI_MAJOR;
    m.abi_minor = UMLOS_ABI_MINOR;
    m.name = s.name.c_str();  // s.name never changes after construction
    m.version = s.version.c_str();
    m.operators = s.operator_ptrs.empty() ? nullptr : s.operator_ptrs.data();
    m.n_operators = static_cast<uint32_t>(s.operator_ptrs.size());
    m.drivers = s.drivers.empty() ? nullptr : s.drivers.data();
    m.n_drivers = static_cast<uint32_t>(s.drivers.size());
    m.strategies = s.strategy_ptrs.empty() ? nullptr : s.strategy_ptrs.data();
    m.n_strategies = static_cast<uint32_t>(s.strategy_ptrs.size());
    m.invariants = s.invariant_ptrs.empty() ? nullptr : s.invariant_ptrs.data();
    m.n_invariants = static_cast<uint32_t>(s.invariant_ptrs.size());
    m.primitives = s.primitives.empty() ? nullptr : s.primitives.data();
    m.n_primitives = static_cast<uint32_t>(s.primitives.size());
    s.sealed = true;
  }

  std::unique_ptr<Storage> s_;
};

namespace detail {
// The body of umlos_module_entry (see UMLOS_SDK_MODULE). Builds the Module
// once (function-local static: thread-safe, kept until the process exits)
// and returns its descriptor; a declaration mistake or any exception refuses
// loading (returns NULL) after telling the kernel why.
inline const umlos_module_desc* module_entry(const umlos_services* svc, Module (*build)()) noexcept {
  if (!svc) return nullptr;
  services_slot() = svc;
  try {
    static Module module = build();
    return module.desc();
  } catch (const DeclarationError& e) {
    report(svc, nullptr, UMLOS_MODULE_DESCRIPTOR_INVALID, e.what());
  } catch (const Error& e) {
    report(svc, nullptr, e.code(), e.what());
  } catch (const std::exception& e) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "uncaught C++ exception while describing the module: %s", e.what());
    report(svc, nullptr, UMLOS_INTERNAL, buf);
  } catch (...) {
    report(svc, nullptr, UMLOS_INTERNAL, "uncaught exception of a non-std type while describing the module");
  }
  return nullptr;
}
}  // namespace detail

}  // namespace sdk
}  // namespace umlos

#endif  // UMLOS_SDK_MODULE_HPP_
