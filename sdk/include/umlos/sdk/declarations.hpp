// umlos/sdk/declarations.hpp — part of the module SDK (umlos/sdk.hpp includes
// every part; include that): declarations: shapes, test vectors and the Operator builder.
#ifndef UMLOS_SDK_DECLARATIONS_HPP_
#define UMLOS_SDK_DECLARATIONS_HPP_

#include "umlos/sdk/context.hpp"

namespace umlos {
namespace sdk {

// ------------------------------------------------------------- declarations

// Extents of a declared value: {} is a scalar, {any} a vector of any length,
// {2, any} a matrix with two rows, any_shape any rank and extents (the
// default when a declaration gives no Dims).
struct Dims {
  Dims(std::initializer_list<int64_t> d) : dims(std::vector<int64_t>(d)) {}
  explicit Dims(std::vector<int64_t> d) : dims(std::move(d)) {}
  static Dims any_shape() {
    Dims d{};
    d.dims.reset();
    return d;
  }
  std::optional<std::vector<int64_t>> dims;  // nullopt: any rank
};
inline const Dims any_shape = Dims::any_shape();

// One known-answer case for an operator (run by `umlos conformance`).
// Values are copied into the builder; T picks the dtype (double -> F64, ...).
class TestVector {
 public:
  explicit TestVector(std::string name) : name_(std::move(name)) {}

  // An input value: `shape` row-major, values.size() == product of extents.
  template <class T>
  TestVector& input(std::string name, Shape shape, std::vector<T> values) {
    inputs_.push_back(make<T>(std::move(name), std::move(shape), std::move(values)));
    return *this;
  }
  // An output that must match (bitwise unless tolerance() is set).
  template <class T>
  TestVector& expect(std::string name, Shape shape, std::vector<T> values) {
    expected_.push_back(make<T>(std::move(name), std::move(shape), std::move(values)));
    return *this;
  }
  // Config keys seen by the operator during this case (services->config_*).
  // Any integer type is an INT key, any floating-point type a FLOAT key.
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  TestVector& config(std::string key, T v) {
    return add_config(std::move(key), UMLOS_ATTR_INT, static_cast<int64_t>(v), 0, {});
  }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  TestVector& config(std::string key, T v) {
    return add_config(std::move(key), UMLOS_ATTR_FLOAT, 0, static_cast<double>(v), {});
  }
  TestVector& config(std::string key, std::string v) {
    return add_config(std::move(key), UMLOS_ATTR_STRING, 0, 0, std::move(v));
  }
  TestVector& config(std::string key, const char* v) { return config(std::move(key), std::string(v)); }
  // |actual - expected| <= abs + rel * |expected|; both 0 (the default):
  // bitwise equality.
  TestVector& tolerance(double rel, double abs) {
    rel_ = rel;
    abs_ = abs;
    return *this;
  }
  // The RNG master seed of the case (the kernel derives the key from it).
  TestVector& seed(uint64_t s) {
    seed_ = s;
    return *this;
  }

 private:
  friend class Module;
  struct Tensor {
    std::string name;
    int32_t dtype = 0;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  struct ConfigEntry {
    std::string key;
    int32_t kind = 0;
    int64_t i = 0;
    double f = 0;
    std::string s;
  };
  template <class T>
  Tensor make(std::string name, Shape shape, std::vector<T> values) const {
    if (shape.size() > UMLOS_MAX_RANK)
      throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" has rank ", shape.size()));
    for (int64_t d : shape)
      if (d < 0) throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" has a negative extent"));
    if (element_count(shape) != values.size())
      throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" of shape ", shape_string(shape),
                                 " needs ", element_count(shape), " values, got ", values.size()));
    Tensor t;
    t.name = std::move(name);
    t.dtype = dtype_of_v<T>;
    t.shape = std::move(shape);
    t.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }
  TestVector& add_config(std::string key, int32_t kind, int64_t i, double f, std::string s) {
    ConfigEntry e;
    e.key = std::move(key);
    e.kind = kind;
    e.i = i;
    e.f = f;
    e.s = std::move(s);
    config_.push_back(std::move(e));
    return *this;
  }

  std::string name_;
  std::vector<Tensor> inputs_, expected_;
  std::vector<ConfigEntry> config_;
  double rel_ = 0, abs_ = 0;
  uint64_t seed_ = 0;
};

// The body of an operator or invariant check.
using Body = std::function<umlos_status(Context&)>;

// An operator declaration (spec 004 IV): name, purity, inputs, outputs, the
// RNG declaration "exactly K draws from stream S", the body and its test
// vectors. A value type: Module::add copies it into stable storage.
class Operator {
 public:
  explicit Operator(std::string name) : name_(std::move(name)) {}

  Operator& summary(std::string s) {
    summary_ = std::move(s);
    return *this;
  }
  Operator& purity(int32_t p) {
    purity_ = p;
    return *this;
  }
  Operator& pure() { return purity(UMLOS_PURE); }
  Operator& stateful() { return purity(UMLOS_STATEFUL); }
  Operator& io() { return purity(UMLOS_IO); }

  // Inputs. `dims` defaults to any_shape. flags: UMLOS_VALUE_OPTIONAL,
  // UMLOS_VALUE_INOUT (or use optional_input / inout).
  Operator& input(std::string name, int32_t dtype, Dims dims = any_shape, uint32_t flags = 0) {
    return add_value(inputs_, std::move(name), dtype, std::move(dims.dims), flags);
  }
  Operator& optional_input(std::string name, int32_t dtype, Dims dims = any_shape) {
    return input(std::move(name), dtype, std::move(dims), UMLOS_VALUE_OPTIONAL);
  }
  // An input a STATEFUL operator updates in place.
  Operator& inout(std::string name, int32_t dtype, Dims dims = any_shape) {
    return input(std::move(name), dtype, std::move(dims), UMLOS_VALUE_INOUT);
  }
  // Outputs. flags: UMLOS_VALUE_PERSISTENT (run state), UMLOS_VALUE_NONFINITE_OK.
  Operator& output(std::string name, int32_t dtype, Dims dims = any_shape, uint32_t flags = 0) {
    return add_value(outputs_, std::move(name), dtype, std::move(dims.dims), flags);
  }

  // "RNG consumption: exactly `count` draws from stream `stream`" (spec 0.S).
  // The default is "exactly 0 draws from stream none".
  Operator& draws(int32_t stream, uint32_t count) {
    rng_stream_ = stream;
    rng_draws_ = count;
    return *this;
  }

  // The body: void(Context&) (throw sdk::Error to fail) or
  // umlos_status(Context&) (return c.fail(...) to fail).
  template <class F>
  Operator& run(F body) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Context&>>) {
      body_ = [body](Context& c) mutable -> umlos_status {
        body(c);
        return UMLOS_OK;
      };
    } else {
      body_ = [body](Context& c) mutable -> umlos_status { return static_cast<umlos_status>(body(c)); };
    }
    return *this;
  }

  Operator& test(TestVector v) {
    tests_.push_back(std::move(v));
    return *this;
  }

 private:
  friend class Module;
  struct Value {
    std::string name;
    int32_t dtype = 0;
    std::optional<std::vector<int64_t>> dims;
    uint32_t flags = 0;
  };
  Operator& add_value(std::vector<Value>& list, std::string name, int32_t dtype,
                      std::optional<std::vector<int64_t>> dims, uint32_t flags) {
    Value v;
    v.name = std::move(name);
    v.dtype = dtype;
    v.dims = std::move(dims);
    v.flags = flags;
    list.push_back(std::move(v));
    return *this;
  }

  std::string name_, summary_;
  int32_t purity_ = 0;
  int32_t rng_stream_ = UMLOS_STREAM_NONE;
  uint32_t rng_draws_ = 0;
  std::vector<Value> inputs_, outputs_;
  Body body_;
  std::vector<TestVector> tests_;
};

namespace detail {
// What an SDK trampoline finds in a descriptor's user_data.
struct BodyRecord {
  Body body;
};
inline umlos_status body_trampoline(const umlos_services* svc, umlos_ctx* ctx, void* user_data) noexcept {
  return guard(svc, ctx, [&]() -> umlos_status {
    Context c(svc, ctx);
    const auto* record = static_cast<const BodyRecord*>(user_data);
    if (!record || !record->body) throw Error(UMLOS_INTERNAL, "operator has no body");
    return record->body(c);
  });
}
// A plan function given as a template argument: the strategy descriptor has
// no user_data, so each plan function gets its own trampoline.
template <auto Plan>
umlos_status plan_trampoline(const umlos_services* svc, umlos_ctx* ctx, const umlos_plan_request* request,
                             umlos_plan_result* result) noexcept {
  return guard(svc, ctx, [&]() -> umlos_status {
    if (!request || !result) throw Error(UMLOS_INVALID_ARGUMENT, "plan: null request or result");
    Context c(svc, ctx);
    if constexpr (std::is_void_v<decltype(Plan(c, *request, *result))>) {
      Plan(c, *request, *result);
      return UMLOS_OK;
    } else {
      return static_cast<umlos_status>(Plan(c, *request, *result));
    }
  });
}
}  // namespace detail

}  // namespace sdk
}  // namespace umlos

#endif  // UMLOS_SDK_DECLARATIONS_HPP_
