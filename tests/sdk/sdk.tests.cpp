// sdk.tests.cpp — the SDK (sdk/include/umlos/sdk.hpp) against the ABI
// contract, independent of the kernel's implementation: a minimal service
// table written from abi/umlos_abi.h alone (FakeKernel) plays the kernel, so
// these tests pin down what the SDK promises module authors (descriptors,
// validation, exception containment, typed helpers) and run the shipped SDK
// template and C module's own test vectors through their real entry points.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

// ------------------------------------------------------------ FakeKernel

struct FakeTensor {
  int32_t dtype = 0;
  umlos_shape shape{};
  std::vector<uint8_t> bytes;
};

struct ConfigValue {
  int32_t kind = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;
};

// One operator call's world: values, config, RNG counters, the last error.
// Contexts are FakeKernel* cast to umlos_ctx*.
struct FakeKernel {
  std::deque<FakeTensor> tensors;
  std::map<std::string, FakeTensor*> values;
  std::map<std::string, ConfigValue> config;
  uint32_t key[2] = {0x01234567u, 0x89abcdefu};
  uint64_t draws[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};
  umlos_status last_code = UMLOS_OK;
  std::string last_message;
  std::vector<std::string> log_lines;
  umlos_services table{};

  FakeKernel() {
    table.struct_size = sizeof(umlos_services);
    table.abi_major = UMLOS_ABI_MAJOR;
    table.abi_minor = UMLOS_ABI_MINOR;
    table.log = [](umlos_ctx* c, int32_t, const char* m) { self(c)->log_lines.push_back(m); };
    table.error = [](umlos_ctx* c, umlos_status code, const char* m) -> umlos_status {
      if (c) {
        self(c)->last_code = code;
        self(c)->last_message = m;
      }
      return code;
    };
    table.config_f64 = [](umlos_ctx* c, const char* k, double* out) -> umlos_status {
      auto it = self(c)->config.find(k);
      if (it == self(c)->config.end()) return UMLOS_NOT_FOUND;
      if (it->second.kind != UMLOS_ATTR_FLOAT) return UMLOS_INVALID_ARGUMENT;
      *out = it->second.f;
      return UMLOS_OK;
    };
    table.config_i64 = [](umlos_ctx* c, const char* k, int64_t* out) -> umlos_status {
      auto it = self(c)->config.find(k);
      if (it == self(c)->config.end()) return UMLOS_NOT_FOUND;
      if (it->second.kind != UMLOS_ATTR_INT) return UMLOS_INVALID_ARGUMENT;
      *out = it->second.i;
      return UMLOS_OK;
    };
    table.config_str = [](umlos_ctx* c, const char* k, const char** out, size_t* n) -> umlos_status {
      auto it = self(c)->config.find(k);
      if (it == self(c)->config.end()) return UMLOS_NOT_FOUND;
      if (it->second.kind != UMLOS_ATTR_STRING) return UMLOS_INVALID_ARGUMENT;
      *out = it->second.s.c_str();
      *n = it->second.s.size();
      return UMLOS_OK;
    };
    table.value_get = [](umlos_ctx* c, const char* name, umlos_tensor** out) -> umlos_status {
      auto it = self(c)->values.find(name);
      if (it == self(c)->values.end()) return UMLOS_NOT_FOUND;
      *out = handle(it->second);
      return UMLOS_OK;
    };
    table.value_create = [](umlos_ctx* c, const char* name, int32_t dtype, const umlos_shape* s,
                            umlos_tensor** out) -> umlos_status {
      FakeTensor* t = self(c)->make(dtype, *s);
      if (!t) return UMLOS_INVALID_ARGUMENT;
      self(c)->values[name] = t;
      *out = handle(t);
      return UMLOS_OK;
    };
    table.tensor_temp = [](umlos_ctx* c, int32_t dtype, const umlos_shape* s, umlos_tensor** out) -> umlos_status {
      FakeTensor* t = self(c)->make(dtype, *s);
      if (!t) return UMLOS_INVALID_ARGUMENT;
      *out = handle(t);
      return UMLOS_OK;
    };
    table.tensor_info = [](umlos_ctx*, const umlos_tensor* t, int32_t* d, umlos_shape* s) -> umlos_status {
      *d = tensor(t)->dtype;
      *s = tensor(t)->shape;
      return UMLOS_OK;
    };
    table.tensor_read = [](umlos_ctx*, const umlos_tensor* t, uint64_t off, void* dst, uint64_t n) -> umlos_status {
      const FakeTensor* x = tensor(t);
      if (off + n > x->bytes.size()) return UMLOS_OUT_OF_RANGE;
      if (n) std::memcpy(dst, x->bytes.data() + off, n);
      return UMLOS_OK;
    };
    table.tensor_write = [](umlos_ctx*, umlos_tensor* t, uint64_t off, const void* src, uint64_t n) -> umlos_status {
      FakeTensor* x = const_cast<FakeTensor*>(tensor(t));
      if (off + n > x->bytes.size()) return UMLOS_OUT_OF_RANGE;
      if (n) std::memcpy(x->bytes.data() + off, src, n);
      return UMLOS_OK;
    };
    table.dispatch = [](umlos_ctx*, const char*, const umlos_tensor* const*, uint32_t, umlos_tensor* const*, uint32_t,
                        const umlos_attr*, uint32_t) -> umlos_status { return UMLOS_PRIMITIVE_UNSUPPORTED; };
    table.rng_draw = [](umlos_ctx* c, int32_t stream, int32_t dist, umlos_tensor* out) -> umlos_status {
      FakeTensor* t = const_cast<FakeTensor*>(tensor(out));
      if (sdk::distribution_dtype(dist) != t->dtype) return UMLOS_INVALID_ARGUMENT;
      const uint64_t n = t->bytes.size() / sdk::dtype_size(t->dtype);
      return self(c)->draw(stream, dist, t->bytes.data(), n);
    };
    table.rng_draw_host = [](umlos_ctx* c, int32_t stream, int32_t dist, void* dst, uint64_t n) -> umlos_status {
      return self(c)->draw(stream, dist, dst, n);
    };
    table.iteration = [](umlos_ctx*) -> int64_t { return 0; };
    table.replay_token = [](umlos_ctx*, uint8_t out[32]) { std::memset(out, 0xab, 32); };
  }

  umlos_ctx* ctx() { return reinterpret_cast<umlos_ctx*>(this); }
  static FakeKernel* self(umlos_ctx* c) { return reinterpret_cast<FakeKernel*>(c); }
  static umlos_tensor* handle(FakeTensor* t) { return reinterpret_cast<umlos_tensor*>(t); }
  static const FakeTensor* tensor(const umlos_tensor* t) { return reinterpret_cast<const FakeTensor*>(t); }

  FakeTensor* make(int32_t dtype, const umlos_shape& s) {
    if (sdk::dtype_size(dtype) == 0 || s.rank > UMLOS_MAX_RANK) return nullptr;
    tensors.emplace_back();
    FakeTensor& t = tensors.back();
    t.dtype = dtype;
    t.shape = s;
    t.bytes.assign(sdk::element_count(sdk::from_abi_shape(s)) * sdk::dtype_size(dtype), 0);
    return &t;
  }
  FakeTensor* put(const std::string& name, int32_t dtype, const sdk::Shape& shape, const void* data) {
    FakeTensor* t = make(dtype, sdk::to_abi_shape(shape));
    if (!t->bytes.empty()) std::memcpy(t->bytes.data(), data, t->bytes.size());
    values[name] = t;
    return t;
  }
  // One draw: element i from counter (i, d) of abi/umlos_philox.h.
  umlos_status draw(int32_t stream, int32_t dist, void* dst, uint64_t n) {
    if (stream <= UMLOS_STREAM_NONE || stream >= UMLOS_STREAM_COUNT) return UMLOS_INVALID_ARGUMENT;
    const uint64_t d = draws[stream]++;
    const uint32_t s = static_cast<uint32_t>(stream);
    for (uint64_t i = 0; i < n; ++i) {
      switch (dist) {
        case UMLOS_DIST_U32:
          static_cast<uint32_t*>(dst)[i] = umlos_draw_element_u32(key, s, d, i);
          break;
        case UMLOS_DIST_UNIFORM_F64:
          static_cast<double*>(dst)[i] = umlos_draw_element_uniform_f64(key, s, d, i);
          break;
        case UMLOS_DIST_UNIFORM_F32:
          static_cast<float*>(dst)[i] = umlos_draw_element_uniform_f32(key, s, d, i);
          break;
        case UMLOS_DIST_NORMAL_F64:
          static_cast<double*>(dst)[i] = umlos_draw_element_normal_f64(key, s, d, i);
          break;
        case UMLOS_DIST_NORMAL_F32:
          static_cast<float*>(dst)[i] = umlos_draw_element_normal_f32(key, s, d, i);
          break;
        default:
          return UMLOS_INVALID_ARGUMENT;
      }
    }
    return UMLOS_OK;
  }
  template <class T>
  std::vector<T> get(const std::string& name) const {
    const FakeTensor* t = values.at(name);
    REQUIRE(t->dtype == sdk::dtype_of_v<T>);
    std::vector<T> out(t->bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), t->bytes.data(), t->bytes.size());
    return out;
  }
  uint64_t total_draws() const { return draws[1] + draws[2] + draws[3]; }
};

umlos_status call(const umlos_operator_desc* op, FakeKernel& k) { return op->run(&k.table, k.ctx(), op->user_data); }

const umlos_operator_desc* find_op(const umlos_module_desc* m, const std::string& name) {
  for (uint32_t i = 0; i < m->n_operators; ++i)
    if (name == m->operators[i]->name) return m->operators[i];
  return nullptr;
}

// Runs test vector `v` of `op` in a fresh FakeKernel, as `umlos conformance`
// does: inputs and config from the vector, then the declared draws, the
// expected outputs (bitwise, tolerances being 0 in these modules) and the
// untouched inputs of a PURE operator are checked. Returns the kernel for
// further checks.
std::unique_ptr<FakeKernel> run_vector(const umlos_operator_desc* op, const umlos_test_vector& v) {
  auto k = std::make_unique<FakeKernel>();
  k->key[0] = static_cast<uint32_t>(v.seed);
  k->key[1] = static_cast<uint32_t>(v.seed >> 32);
  for (uint32_t c = 0; c < v.n_config; ++c) {
    const umlos_attr& a = v.config[c];
    ConfigValue cv;
    cv.kind = a.kind;
    cv.i = a.i;
    cv.f = a.f;
    if (a.kind == UMLOS_ATTR_STRING) cv.s = a.s;
    k->config[a.key] = cv;
  }
  std::map<std::string, std::vector<uint8_t>> inputs_before;
  for (uint32_t i = 0; i < v.n_inputs; ++i) {
    const umlos_tensor_data& t = v.inputs[i];
    sdk::Shape shape(t.dims, t.dims + t.rank);
    FakeTensor* ft = k->put(t.name, t.dtype, shape, t.data);
    REQUIRE(ft->bytes.size() == t.bytes);
    inputs_before[t.name] = ft->bytes;
  }
  INFO("operator " << op->name << ", vector \"" << v.name << "\"");
  const umlos_status st = call(op, *k);
  INFO("message: " << k->last_message);
  REQUIRE(st == UMLOS_OK);
  CHECK(k->total_draws() == op->rng_draws);
  if (op->rng_draws) CHECK(k->draws[op->rng_stream] == op->rng_draws);
  for (uint32_t i = 0; i < v.n_expected; ++i) {
    const umlos_tensor_data& e = v.expected[i];
    INFO("expected output " << e.name);
    REQUIRE(k->values.count(e.name) == 1);
    const FakeTensor* out = k->values.at(e.name);
    CHECK(out->dtype == e.dtype);
    CHECK(out->shape.rank == e.rank);
    for (uint32_t d = 0; d < e.rank; ++d) CHECK(out->shape.dims[d] == e.dims[d]);
    REQUIRE(out->bytes.size() == e.bytes);
    CHECK(std::memcmp(out->bytes.data(), e.data, e.bytes) == 0);
  }
  if (op->purity == UMLOS_PURE)
    for (const auto& [name, bytes] : inputs_before) CHECK(k->values.at(name)->bytes == bytes);
  return k;
}

// A module .so opened directly (RTLD_LOCAL) and described with a FakeKernel
// service table: the table must outlive the module's use of it, so it is
// static here. The handle is never closed (modules are never unloaded).
const umlos_module_desc* open_module(const std::string& file) {
  static FakeKernel entry_kernel;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO(file << ": " << (handle ? "" : dlerror()));
  REQUIRE(handle != nullptr);
  auto entry = reinterpret_cast<umlos_module_entry_fn>(dlsym(handle, UMLOS_MODULE_ENTRY_SYMBOL));
  REQUIRE(entry != nullptr);
  const umlos_module_desc* m = entry(&entry_kernel.table);
  REQUIRE(m != nullptr);
  REQUIRE(m->struct_size >= UMLOS_MODULE_DESC_SIZE_V1_0);
  REQUIRE(m->abi_major == UMLOS_ABI_MAJOR);
  return m;
}

// ------------------------------------------------------------ a module

void scale_body(sdk::Context& c) {
  const umlos_tensor* x = c.input("x");
  const double factor = c.config<double>("scale", 2.0);
  std::vector<double> v = c.read<double>(x);
  for (double& e : v) e *= factor;
  c.write(c.output("y", UMLOS_DTYPE_F64, c.shape(x)), v);
}

sdk::Operator scale_op() {
  return sdk::Operator("Test.Sdk.Scale_v1")
      .summary("y = scale * x")
      .pure()
      .input("x", UMLOS_DTYPE_F64, {sdk::any})
      .optional_input("bias", UMLOS_DTYPE_F64)
      .output("y", UMLOS_DTYPE_F64, {sdk::any}, UMLOS_VALUE_PERSISTENT)
      .run(scale_body)
      .test(sdk::TestVector("three")
                .config("scale", 3.0)
                .config("mode", "exact")
                .seed(99)
                .input<double>("x", {2}, {1.0, -2.0})
                .expect<double>("y", {2}, {3.0, -6.0}));
}

void first_fit_plan(sdk::Context&, const umlos_plan_request& req, umlos_plan_result& res) {
  uint64_t offset = 0;
  for (uint64_t i = 0; i < req.n_tensors; ++i) {
    res.offsets[i] = offset;
    res.slots[i] = i;
    offset += req.tensors[i].size;
  }
  res.arena_footprint[0] = offset;
  res.work_units = req.n_tensors;
}

void broken_plan(sdk::Context&, const umlos_plan_request&, umlos_plan_result&) {
  throw std::logic_error("planner bug");
}

}  // namespace

TEST_CASE("An SDK module lays out its declarations as ABI descriptors", "[sdk]") {
  sdk::Module module = sdk::Module("test_sdk", "0.1")
                           .add(scale_op())
                           .add(sdk::Operator("Test.Sdk.Noise_v1")
                                    .stateful()
                                    .draws(UMLOS_STREAM_INIT, 2)
                                    .output("n", UMLOS_DTYPE_F32)
                                    .run([](sdk::Context&) {}));
  const umlos_module_desc* m = module.desc();
  REQUIRE(m->struct_size == sizeof(umlos_module_desc));
  CHECK(m->abi_major == UMLOS_ABI_MAJOR);
  CHECK(m->abi_minor == UMLOS_ABI_MINOR);
  CHECK(std::string(m->name) == "test_sdk");
  CHECK(std::string(m->version) == "0.1");
  REQUIRE(m->n_operators == 2);
  CHECK(m->n_drivers == 0);
  CHECK(m->n_strategies == 0);

  const umlos_operator_desc* op = m->operators[0];
  CHECK(op->struct_size == sizeof(umlos_operator_desc));
  CHECK(std::string(op->name) == "Test.Sdk.Scale_v1");
  CHECK(std::string(op->summary) == "y = scale * x");
  CHECK(op->purity == UMLOS_PURE);
  CHECK(op->rng_stream == UMLOS_STREAM_NONE);
  CHECK(op->rng_draws == 0);
  REQUIRE(op->n_inputs == 2);
  CHECK(std::string(op->inputs[0].name) == "x");
  CHECK(op->inputs[0].dtype == UMLOS_DTYPE_F64);
  CHECK(op->inputs[0].rank == 1);
  CHECK(op->inputs[0].dims[0] == UMLOS_DIM_ANY);
  CHECK(op->inputs[1].rank == UMLOS_RANK_ANY);
  CHECK(op->inputs[1].flags == UMLOS_VALUE_OPTIONAL);
  REQUIRE(op->n_outputs == 1);
  CHECK(op->outputs[0].flags == UMLOS_VALUE_PERSISTENT);

  REQUIRE(op->n_test_vectors == 1);
  const umlos_test_vector& v = op->test_vectors[0];
  CHECK(v.struct_size == sizeof(umlos_test_vector));
  CHECK(std::string(v.name) == "three");
  CHECK(v.seed == 99);
  REQUIRE(v.n_config == 2);
  CHECK(std::string(v.config[0].key) == "scale");
  CHECK(v.config[0].kind == UMLOS_ATTR_FLOAT);
  CHECK(v.config[0].f == 3.0);
  CHECK(v.config[1].kind == UMLOS_ATTR_STRING);
  CHECK(std::string(v.config[1].s) == "exact");
  REQUIRE(v.n_inputs == 1);
  CHECK(v.inputs[0].dtype == UMLOS_DTYPE_F64);
  CHECK(v.inputs[0].rank == 1);
  CHECK(v.inputs[0].dims[0] == 2);
  REQUIRE(v.inputs[0].bytes == 2 * sizeof(double));
  const double x1 = static_cast<const double*>(v.inputs[0].data)[1];
  CHECK(x1 == -2.0);

  const umlos_operator_desc* noise = m->operators[1];
  CHECK(noise->purity == UMLOS_STATEFUL);
  CHECK(noise->rng_stream == UMLOS_STREAM_INIT);
  CHECK(noise->rng_draws == 2);
  CHECK(noise->outputs[0].rank == UMLOS_RANK_ANY);
  CHECK(noise->n_test_vectors == 0);
  CHECK(noise->test_vectors == nullptr);
}

TEST_CASE("Test-vector config keys take their ABI kind from the C++ type", "[sdk]") {
  sdk::Module module = sdk::Module("m", "1").add(sdk::Operator("Test.Sdk.Config_v1")
                                                     .pure()
                                                     .output("y", UMLOS_DTYPE_F64)
                                                     .run([](sdk::Context&) {})
                                                     .test(sdk::TestVector("kinds")
                                                               .config("int", 5)
                                                               .config("long long", 6LL)
                                                               .config("byte", uint8_t{7})
                                                               .config("float", 0.25f)
                                                               .config("double", -1.5)
                                                               .config("literal", "text")
                                                               .config("string", std::string("more"))));
  const umlos_test_vector& v = module.desc()->operators[0]->test_vectors[0];
  REQUIRE(v.n_config == 7);
  const int32_t kinds[7] = {UMLOS_ATTR_INT,   UMLOS_ATTR_INT,    UMLOS_ATTR_INT,   UMLOS_ATTR_FLOAT,
                            UMLOS_ATTR_FLOAT, UMLOS_ATTR_STRING, UMLOS_ATTR_STRING};
  for (int i = 0; i < 7; ++i) CHECK(v.config[i].kind == kinds[i]);
  CHECK(v.config[0].i == 5);
  CHECK(v.config[1].i == 6);
  CHECK(v.config[2].i == 7);
  CHECK(v.config[3].f == 0.25);
  CHECK(v.config[4].f == -1.5);
  CHECK(std::string(v.config[5].s) == "text");
  CHECK(std::string(v.config[6].s) == "more");
  CHECK(v.config[0].s == nullptr);
}

TEST_CASE("SDK descriptors keep their addresses when the Module object moves", "[sdk]") {
  sdk::Module first = sdk::Module("m", "1").add(scale_op());
  const umlos_module_desc* desc = first.desc();
  const umlos_operator_desc* op = desc->operators[0];
  const char* name = op->name;
  const void* data = op->test_vectors[0].inputs[0].data;

  sdk::Module moved = std::move(first);
  CHECK(moved.desc() == desc);
  CHECK(moved.desc()->operators[0] == op);
  CHECK(op->name == name);
  CHECK(std::string(name) == "Test.Sdk.Scale_v1");
  CHECK(op->test_vectors[0].inputs[0].data == data);
  // Sealed: adding after the kernel has seen the descriptor is refused.
  CHECK_THROWS_AS(moved.add(sdk::Operator("Late_v1").pure().output("y", UMLOS_DTYPE_F64).run([](sdk::Context&) {})),
                  sdk::DeclarationError);
}

TEST_CASE("Declaration mistakes are refused with a message naming the operator", "[sdk]") {
  auto noop = [](sdk::Context&) {};
  auto refused = [](sdk::Operator op) -> std::string {
    try {
      sdk::Module("m", "1").add(std::move(op));
    } catch (const sdk::DeclarationError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(refused(sdk::Operator("A_v1").output("y", UMLOS_DTYPE_F64).run(noop)),
             Catch::Contains("A_v1") && Catch::Contains("purity"));
  CHECK_THAT(refused(sdk::Operator("B_v1").stateful().draws(UMLOS_STREAM_MISC, 0).run(noop)),
             Catch::Contains("B_v1") && Catch::Contains("inconsistent"));
  CHECK_THAT(refused(sdk::Operator("C_v1").stateful().draws(UMLOS_STREAM_NONE, 3).run(noop)),
             Catch::Contains("inconsistent"));
  CHECK_THAT(refused(sdk::Operator("D_v1").pure().output("y", UMLOS_DTYPE_F64)), Catch::Contains("no body"));
  CHECK_THAT(refused(sdk::Operator("E_v1")
                         .pure()
                         .input("x", UMLOS_DTYPE_F64)
                         .input("x", UMLOS_DTYPE_F64)
                         .output("y", UMLOS_DTYPE_F64)
                         .run(noop)),
             Catch::Contains("\"x\" declared twice"));
  CHECK_THAT(refused(sdk::Operator("F_v1")
                         .pure()
                         .output("y", UMLOS_DTYPE_F64)
                         .run(noop)
                         .test(sdk::TestVector("t").input<double>("z", {1}, {1.0}))),
             Catch::Contains("\"z\" is not a declared input"));
  CHECK_THAT(refused(sdk::Operator("G_v1")
                         .pure()
                         .output("y", UMLOS_DTYPE_F64)
                         .run(noop)
                         .test(sdk::TestVector("t").expect<float>("w", {}, {1.0f}))),
             Catch::Contains("\"w\" is neither a declared output nor an INOUT input"));
  CHECK_THAT(refused(sdk::Operator("H_v1").pure().output("y", 42).run(noop)), Catch::Contains("not a umlos_dtype"));
  CHECK_THAT(refused(sdk::Operator("I_v1").pure().run(noop)), Catch::Contains("without outputs"));
  CHECK_THAT(refused(sdk::Operator("").pure().output("y", UMLOS_DTYPE_F64).run(noop)), Catch::Contains("empty name"));
  // Too many values for the shape: refused when the vector is written.
  CHECK_THROWS_WITH(sdk::TestVector("t").input<double>("x", {2, 2}, {1.0, 2.0, 3.0}),
                    Catch::Contains("needs 4 values, got 3"));
  // The same operator name twice in one module.
  CHECK_THROWS_WITH(sdk::Module("m", "1").add(scale_op()).add(scale_op()), Catch::Contains("declared twice"));
  CHECK_NOTHROW(sdk::Module("m", "1").add(scale_op()));
}

TEST_CASE("Exceptions thrown by an operator body become status codes with their message", "[sdk]") {
  auto module_with = [](auto body) {
    sdk::Operator op("Test.Sdk.Throws_v1");
    op.stateful().output("y", UMLOS_DTYPE_F64).run(std::move(body));
    return sdk::Module("m", "1").add(std::move(op));
  };
  SECTION("a std::exception is UMLOS_INTERNAL with what()") {
    sdk::Module m = module_with([](sdk::Context&) -> umlos_status { throw std::runtime_error("disk on fire"); });
    FakeKernel k;
    CHECK(call(m.desc()->operators[0], k) == UMLOS_INTERNAL);
    CHECK(k.last_code == UMLOS_INTERNAL);
    CHECK_THAT(k.last_message, Catch::Contains("disk on fire"));
  }
  SECTION("an sdk::Error keeps its own code") {
    sdk::Module m = module_with(
        [](sdk::Context&) -> umlos_status { throw sdk::Error(UMLOS_SHAPE_MISMATCH, "x has ", 3, " elements"); });
    FakeKernel k;
    CHECK(call(m.desc()->operators[0], k) == UMLOS_SHAPE_MISMATCH);
    CHECK(k.last_message == "x has 3 elements");
  }
  SECTION("a non-std exception is still contained") {
    sdk::Module m = module_with([](sdk::Context&) -> umlos_status { throw 42; });
    FakeKernel k;
    CHECK(call(m.desc()->operators[0], k) == UMLOS_INTERNAL);
    CHECK_THAT(k.last_message, Catch::Contains("non-std"));
  }
  SECTION("fail() reports and returns the code") {
    sdk::Module m = module_with([](sdk::Context& c) { return c.fail(UMLOS_OUT_OF_RANGE, "t = ", 7); });
    FakeKernel k;
    CHECK(call(m.desc()->operators[0], k) == UMLOS_OUT_OF_RANGE);
    CHECK(k.last_message == "t = 7");
  }
  SECTION("a failing kernel service surfaces as its own code, naming the call") {
    sdk::Module m = module_with([](sdk::Context& c) { c.input("missing"); });
    FakeKernel k;
    CHECK(call(m.desc()->operators[0], k) == UMLOS_NOT_FOUND);
    CHECK_THAT(k.last_message, Catch::Contains("value_get(\"missing\")") && Catch::Contains("NOT_FOUND"));
  }
}

TEST_CASE("Context reads config keys by type, converting integers and integral floats", "[sdk]") {
  FakeKernel k;
  k.config["i"] = ConfigValue{UMLOS_ATTR_INT, 3, 0, ""};
  k.config["f"] = ConfigValue{UMLOS_ATTR_FLOAT, 0, 4.0, ""};
  k.config["half"] = ConfigValue{UMLOS_ATTR_FLOAT, 0, 0.5, ""};
  k.config["s"] = ConfigValue{UMLOS_ATTR_STRING, 0, 0, "adam"};
  k.config["big"] = ConfigValue{UMLOS_ATTR_INT, 1000, 0, ""};
  sdk::Context c(&k.table, k.ctx());
  CHECK(c.config<double>("i", 0.0) == 3.0);
  CHECK(c.config<int>("f", 0) == 4);
  CHECK(c.config<double>("half", 0.0) == 0.5);
  CHECK(c.config("s", "sgd") == "adam");
  CHECK(c.config<double>("absent", 2.0) == 2.0);
  CHECK(c.config("absent", "sgd") == "sgd");
  CHECK_FALSE(c.config_opt<int64_t>("absent").has_value());
  CHECK(c.config_required<int64_t>("i") == 3);
  CHECK_THROWS_AS(c.config_required<int64_t>("absent"), sdk::Error);
  // Wrong types are errors, never silently the default.
  CHECK_THROWS_WITH(c.config<int>("half", 1), Catch::Contains("not an integer"));
  CHECK_THROWS_AS(c.config<double>("s", 1.0), sdk::Error);
  CHECK_THROWS_WITH(c.config<uint8_t>("big", 0), Catch::Contains("out of range"));
}

TEST_CASE("Context moves values in and out with checked dtypes and sizes", "[sdk]") {
  FakeKernel k;
  const double x[] = {1.5, -2.0, 4.0};
  k.put("x", UMLOS_DTYPE_F64, {3}, x);
  sdk::Context c(&k.table, k.ctx());
  const umlos_tensor* t = c.input("x");
  CHECK(c.dtype(t) == UMLOS_DTYPE_F64);
  CHECK(c.shape(t) == sdk::Shape{3});
  CHECK(c.elements(t) == 3);
  CHECK(c.read<double>(t) == std::vector<double>{1.5, -2.0, 4.0});
  CHECK_THROWS_WITH(c.read<float>(t), Catch::Contains("read<f32> of a tensor of dtype f64"));
  CHECK(c.optional_input("absent") == nullptr);

  umlos_tensor* y = c.output("y", UMLOS_DTYPE_I32, {2, 2});
  CHECK(c.read<int32_t>(y) == std::vector<int32_t>{0, 0, 0, 0});  // zero-filled
  c.write(y, std::vector<int32_t>{1, 2, 3, 4});
  CHECK(k.get<int32_t>("y") == std::vector<int32_t>{1, 2, 3, 4});
  CHECK_THROWS_WITH(c.write(y, std::vector<int32_t>{1, 2}), Catch::Contains("2 values into a tensor of [2,2]"));
  c.output<uint8_t>("z", {}, {7});
  CHECK(k.get<uint8_t>("z") == std::vector<uint8_t>{7});
  CHECK_THROWS_AS(c.output("w", UMLOS_DTYPE_F64, sdk::Shape(9, 1)), sdk::Error);  // rank 9
}

TEST_CASE("Context draws are one service call each, with the values of umlos_philox.h", "[sdk][rng]") {
  FakeKernel k;
  sdk::Context c(&k.table, k.ctx());
  const std::vector<double> u = c.draw_host<double>(UMLOS_STREAM_CLUSTER, UMLOS_DIST_UNIFORM_F64, 5);
  const std::vector<uint32_t> w = c.draw_host<uint32_t>(UMLOS_STREAM_CLUSTER, UMLOS_DIST_U32, 3);
  CHECK(k.draws[UMLOS_STREAM_CLUSTER] == 2);
  for (uint64_t i = 0; i < 5; ++i) CHECK(u[i] == umlos_draw_element_uniform_f64(k.key, UMLOS_STREAM_CLUSTER, 0, i));
  for (uint64_t i = 0; i < 3; ++i) CHECK(w[i] == umlos_draw_element_u32(k.key, UMLOS_STREAM_CLUSTER, 1, i));
  // The element type must be the distribution's: refused before drawing.
  CHECK_THROWS_WITH(c.draw_host<float>(UMLOS_STREAM_MISC, UMLOS_DIST_NORMAL_F64, 2), Catch::Contains("yields f64"));
  CHECK(k.draws[UMLOS_STREAM_MISC] == 0);
  umlos_tensor* t = c.temp(UMLOS_DTYPE_F32, {4});
  c.draw(UMLOS_STREAM_MISC, UMLOS_DIST_NORMAL_F32, t);
  const std::vector<float> n = c.read<float>(t);
  for (uint64_t i = 0; i < 4; ++i) CHECK(n[i] == umlos_draw_element_normal_f32(k.key, UMLOS_STREAM_MISC, 0, i));
}

TEST_CASE("Services an older kernel lacks are reported as UNIMPLEMENTED, not called", "[sdk]") {
  FakeKernel k;
  k.table.struct_size = UMLOS_STRUCT_SIZE(umlos_services, config_str);  // a table that ends early
  sdk::Context c(&k.table, k.ctx());
  try {
    c.input("x");
    FAIL("value_get beyond the table's struct_size was called");
  } catch (const sdk::Error& e) {
    CHECK(e.code() == UMLOS_UNIMPLEMENTED);
    CHECK_THAT(e.what(), Catch::Contains("value_get"));
  }
  k.table.struct_size = sizeof(umlos_services);
  k.table.dispatch = nullptr;  // a NULL slot means "not provided"
  CHECK_THROWS_WITH(c.dispatch("add", {}, {}), Catch::Contains("dispatch is not provided"));
  // An unzeroed temporary (1.10) from a kernel without the slot is an
  // ordinary, zeroed one: never a call through NULL.
  REQUIRE(k.table.tensor_temp_uninit == nullptr);
  umlos_tensor* t = c.temp_uninit(UMLOS_DTYPE_F64, {3});
  CHECK(c.read<double>(t) == std::vector<double>(3, 0.0));
  k.table.struct_size = UMLOS_STRUCT_SIZE(umlos_services, digest_output);  // a 1.8 table
  k.table.tensor_temp_uninit = [](umlos_ctx*, int32_t, const umlos_shape*, umlos_tensor**) -> umlos_status {
    return UMLOS_INTERNAL;  // beyond the table's size: must not be called
  };
  CHECK(c.read<double>(c.temp_uninit(UMLOS_DTYPE_F64, {2})) == std::vector<double>(2, 0.0));
  // A host view (1.11) from a 1.10 kernel is none: the caller reads a copy.
  k.table.struct_size = UMLOS_SERVICES_SIZE_V1_10;
  k.table.tensor_host_view = [](umlos_ctx*, const umlos_tensor*, const void**) -> umlos_status {
    return UMLOS_INTERNAL;  // beyond the table's size: must not be called
  };
  CHECK(c.host_view(t) == nullptr);
}

TEST_CASE("SDK invariants and strategies are wrapped like operators", "[sdk]") {
  sdk::Module module =
      sdk::Module("m", "1")
          .invariant("Test.Sdk.AlwaysViolated", UMLOS_CHECK_AFTER_LOSS,
                     [](sdk::Context& c) { return c.fail(UMLOS_CONTRACT_VIOLATION, "theta[0] = nan"); })
          .strategy<first_fit_plan>("Test.Sdk.Sequential_v1", "no reuse")
          .strategy<broken_plan>("Test.Sdk.Broken_v1");
  const umlos_module_desc* m = module.desc();
  REQUIRE(m->n_invariants == 1);
  REQUIRE(m->n_strategies == 2);
  FakeKernel k;
  const umlos_invariant_desc* inv = m->invariants[0];
  CHECK(inv->point == UMLOS_CHECK_AFTER_LOSS);
  CHECK(inv->check(&k.table, k.ctx(), inv->user_data) == UMLOS_CONTRACT_VIOLATION);
  CHECK(k.last_message == "theta[0] = nan");

  umlos_plan_tensor tensors[2] = {{64, 0, 0, 1, 0, 0, 0}, {32, 0, 1, 2, 0, 0, 0}};
  umlos_plan_arena arena{"activations", 128, 0, 0, 0};
  umlos_plan_request req{sizeof(umlos_plan_request), tensors, 2, &arena, 1, 0, nullptr};
  uint64_t offsets[2], slots[2], footprint[1];
  umlos_plan_result res{sizeof(umlos_plan_result), offsets, slots, footprint, 0};
  CHECK(std::string(m->strategies[0]->summary) == "no reuse");
  CHECK(m->strategies[0]->plan(&k.table, k.ctx(), &req, &res) == UMLOS_OK);
  CHECK(offsets[1] == 64);
  CHECK(footprint[0] == 96);
  CHECK(m->strategies[1]->summary == nullptr);
  CHECK(m->strategies[1]->plan(&k.table, k.ctx(), &req, &res) == UMLOS_INTERNAL);
  CHECK_THAT(k.last_message, Catch::Contains("planner bug"));
}

TEST_CASE("The SDK template module passes its own test vectors through its real entry point", "[sdk][module]") {
  const umlos_module_desc* m = open_module(std::string(UMLOS_MODULE_DIR) + "/libumlos_sdk_example.so");
  CHECK(std::string(m->name) == "example_ops");
  const umlos_operator_desc* scale = find_op(m, "Example.Math.Scale_v1");
  const umlos_operator_desc* noise = find_op(m, "Example.Random.AddNoise_v1");
  REQUIRE(scale != nullptr);
  REQUIRE(noise != nullptr);
  CHECK(scale->purity == UMLOS_PURE);
  CHECK(noise->rng_stream == UMLOS_STREAM_MISC);
  CHECK(noise->rng_draws == 1);
  REQUIRE(scale->n_test_vectors == 3);
  for (uint32_t i = 0; i < scale->n_test_vectors; ++i) run_vector(scale, scale->test_vectors[i]);
  REQUIRE(noise->n_test_vectors == 2);
  run_vector(noise, noise->test_vectors[0]);
  // sigma 1: y = x + one NORMAL_F64 draw, element i from counter (i, 0).
  std::unique_ptr<FakeKernel> k = run_vector(noise, noise->test_vectors[1]);
  const std::vector<double> y = k->get<double>("y");
  REQUIRE(y.size() == 4);
  for (uint64_t i = 0; i < 4; ++i) CHECK(y[i] == umlos_draw_element_normal_f64(k->key, UMLOS_STREAM_MISC, 0, i));
}

TEST_CASE("The C module passes its own test vectors through its real entry point", "[sdk][module][c_module]") {
  const umlos_module_desc* m = open_module(std::string(UMLOS_MODULE_DIR) + "/libumlos_c_example.so");
  CHECK(std::string(m->name) == "umlos_c_example");
  const umlos_operator_desc* axpy = find_op(m, "Test.C.Axpy_v1");
  const umlos_operator_desc* uniform = find_op(m, "Test.C.UniformDraw_v1");
  REQUIRE(axpy != nullptr);
  REQUIRE(uniform != nullptr);
  for (uint32_t i = 0; i < axpy->n_test_vectors; ++i) run_vector(axpy, axpy->test_vectors[i]);
  REQUIRE(uniform->n_test_vectors == 1);
  std::unique_ptr<FakeKernel> k = run_vector(uniform, uniform->test_vectors[0]);
  // u is exactly draw 0 of stream misc, made with the device-side rng_draw.
  const std::vector<double> u = k->get<double>("u");
  REQUIRE(u.size() == 8);
  for (uint64_t i = 0; i < 8; ++i) CHECK(u[i] == umlos_draw_element_uniform_f64(k->key, UMLOS_STREAM_MISC, 0, i));

  // Mismatched shapes are an error with a message, not a crash.
  FakeKernel bad;
  const double x[] = {1, 2, 3};
  const double y[] = {1, 2};
  bad.put("x", UMLOS_DTYPE_F64, {3}, x);
  bad.put("y", UMLOS_DTYPE_F64, {2}, y);
  CHECK(call(axpy, bad) == UMLOS_SHAPE_MISMATCH);
  CHECK_THAT(bad.last_message, Catch::Contains("differ in shape"));
}

TEST_CASE("to_binary64_be gives the bytes of the scalar definition on every path, f64 in place and f32 widened",
          "[sdk]") {
  namespace sdk = umlos::sdk;
  const double specials[] = {0.0,
                             -0.0,
                             1.0,
                             -2.5,
                             1e-310,
                             -1e300,
                             std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             3.0e-45};
  for (size_t n : {0, 1, 3, 4, 5, 8, 17, 1000}) {
    std::vector<double> d(n);
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) {
      d[i] = i < 9 ? specials[i]
                   : std::ldexp(static_cast<double>(i * 2654435761u % 1000003), static_cast<int>(i % 61) - 30);
      f[i] = static_cast<float>(i < 9 ? specials[i] : d[i] * 0.37);
    }
    // The definition: each value's binary64 bits, most significant byte first.
    auto expect = [&](auto values) {
      std::vector<uint8_t> out(8 * n);
      for (size_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(values[i]);
        uint64_t u;
        std::memcpy(&u, &v, 8);
        for (int k = 0; k < 8; ++k) out[8 * i + k] = static_cast<uint8_t>(u >> (56 - 8 * k));
      }
      return out;
    };
    INFO("n = " << n);
    std::vector<uint8_t> got(8 * n);
    REQUIRE(sdk::detail::to_binary64_be_scalar(UMLOS_DTYPE_F32, f.data(), n, got.data()));
    CHECK(got == expect(f));
    REQUIRE(sdk::to_binary64_be(UMLOS_DTYPE_F32, f.data(), n, got.data()));
    CHECK(got == expect(f));
    std::vector<uint8_t> in_place(8 * n);
    if (n > 0) std::memcpy(in_place.data(), d.data(), 8 * n);  // data() may be null
    REQUIRE(sdk::to_binary64_be(UMLOS_DTYPE_F64, in_place.data(), n, in_place.data()));
    CHECK(in_place == expect(d));
#ifdef UMLOS_SDK_HAVE_BE64_AVX2
    if (__builtin_cpu_supports("avx2")) {
      REQUIRE(sdk::detail::to_binary64_be_avx2(UMLOS_DTYPE_F32, f.data(), n, got.data()));
      CHECK(got == expect(f));
      if (n > 0) std::memcpy(in_place.data(), d.data(), 8 * n);  // data() may be null
      REQUIRE(sdk::detail::to_binary64_be_avx2(UMLOS_DTYPE_F64, in_place.data(), n, in_place.data()));
      CHECK(in_place == expect(d));
    } else {
      WARN("this CPU has no AVX2: only the scalar path was compared");
    }
#endif
  }
}
