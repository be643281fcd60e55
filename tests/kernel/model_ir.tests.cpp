// model_ir.tests.cpp — the spec 004 model body declared as ModelIR
// (docs/model.md, "A model as ModelIR"; manifest key `model_ir`): the
// shipped digits IR against the built-in body node for node, the interface
// checks on hostile bodies, and the manifest entry (pin, hash, refusals).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "../skip.hpp"
#include "cbor.hpp"
#include "graph.hpp"  // modules/lib/model (umlos_model_graph)
#include "manifest.hpp"
#include "run_support.hpp"
#include "sha256.hpp"
#include "test_support.hpp"

using namespace umlos_test;
namespace model = umlos::model;
namespace ir = umlos::modelir;

namespace {

std::string shipped_ir_text() { return read_text(std::string(UMLOS_SOURCE_DIR) + "/manifests/models/digits_vae.yaml"); }

// What the manifest reader hands operators: the IR as canonical CBOR.
std::string ir_bytes(const std::string& yaml) {
  const std::vector<uint8_t> b = umlos::cbor::encode(umlos::parse_yaml_value(yaml, "test.yaml"));
  return std::string(b.begin(), b.end());
}

model::Dims digits_dims(model::Task task, bool training, int32_t dtype) {
  model::Dims d;
  d.batch = 64;
  d.features = 64;
  d.latent = 16;
  d.hidden = 128;  // digits_vae.yaml: H
  d.head_hidden = 128;
  d.outputs = task == model::Task::Multiclass ? 10 : 1;
  d.task = task;
  d.training = training;
  d.dtype = dtype;
  return d;
}

// A node's attributes by key (the driver looks them up by key; an IR file's
// are in canonical CBOR key order).
std::map<std::string, std::string> attr_map(const ir::Node& n) {
  std::map<std::string, std::string> out;
  for (const ir::NodeAttr& a : n.attrs)
    out[a.key] =
        std::to_string(static_cast<int>(a.kind)) + ":" + std::to_string(a.i) + ":" + std::to_string(a.f) + ":" + a.s;
  return out;
}

void check_same_graph(const ir::Graph& a, const ir::Graph& b) {
  REQUIRE(a.declared.size() == b.declared.size());
  for (size_t i = 0; i < a.declared.size(); ++i) {
    INFO("declaration " << i << ": " << a.declared[i].id);
    CHECK(a.declared[i].id == b.declared[i].id);
    CHECK(a.declared[i].role == b.declared[i].role);
    CHECK(a.declared[i].shape == b.declared[i].shape);
    CHECK(a.declared[i].dtype == b.declared[i].dtype);
  }
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node &x = a.nodes[i], &y = b.nodes[i];
    INFO("node " << i << ": " << x.output);
    CHECK(x.node_id == y.node_id);
    CHECK(x.instr == y.instr);
    CHECK(x.inputs == y.inputs);
    CHECK(x.output == y.output);
    CHECK(x.output_shape == y.output_shape);
    CHECK(x.dtype == y.dtype);
    CHECK(x.segment == y.segment);
    CHECK(attr_map(x) == attr_map(y));
  }
  CHECK(a.outputs == b.outputs);
  CHECK(a.loss == b.loss);
}

// A model body that satisfies the interface, as YAML lines, for the
// refusal tests to break one thing at a time.
const std::string kSmallBody = R"(dims: {H: 4}
tensors:
  - {id: x, role: input, shape: [B, D]}
  - {id: z, role: input, shape: [B, p]}
  - {id: W, role: parameter, shape: [D, p]}
  - {id: V, role: parameter, shape: [p, D]}
  - {id: U, role: parameter, shape: [p, C]}
  - {id: g, role: parameter, shape: [C], init: ones}
nodes:
  - {node_id: 0, segment: encode, instr: matmul, inputs: [x, W], output: {id: mu, shape: [B, p]}}
  - {node_id: 1, segment: encode, instr: tanh, inputs: [mu], output: {id: logvar, shape: [B, p]}}
  - {node_id: 2, segment: decode, instr: matmul, inputs: [z, V], output: {id: dec, shape: [B, D]}}
  - {node_id: 3, segment: decode, instr: sigmoid, inputs: [dec], output: {id: recon, shape: [B, D]}}
  - {node_id: 4, segment: head, instr: matmul, inputs: [z, U], output: {id: pre, shape: [B, C]}}
  - {node_id: 5, segment: head, instr: mul, inputs: [pre, g], output: {id: logits, shape: [B, C]}}
)";

model::Dims small_dims(const std::string& yaml) {
  model::Dims d = digits_dims(model::Task::Multiclass, true, UMLOS_DTYPE_F64);
  d.batch = 2;
  d.features = 3;
  d.latent = 2;
  d.outputs = 4;
  d.model_ir = ir_bytes(yaml);
  return d;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// ir_body refuses `yaml` with `code`, naming every part of `parts`.
void check_body_refused(const std::string& yaml, umlos_status code, std::initializer_list<const char*> parts) {
  try {
    model::ir_body(small_dims(yaml));
    FAIL("accepted");
  } catch (const umlos::sdk::Error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    for (const char* p : parts) CHECK_THAT(e.what(), Catch::Contains(p));
  }
}

}  // namespace

TEST_CASE("the shipped digits model IR composes to the built-in spec 004 graph node for node", "[model][modelir]") {
  const std::string bytes = ir_bytes(shipped_ir_text());
  for (model::Task task : {model::Task::Multiclass, model::Task::Binary, model::Task::Regression}) {
    for (bool training : {true, false}) {
      for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
        INFO("task " << model::task_name(task) << ", training " << training << ", dtype " << dtype);
        model::Dims builtin = digits_dims(task, training, dtype);
        model::Dims declared = builtin;
        declared.model_ir = bytes;
        check_same_graph(model::build(builtin), model::build(declared));
        const std::vector<model::Param> a = model::parameters(builtin), b = model::parameters(declared);
        REQUIRE(a.size() == b.size());
        CHECK(a.size() == (training ? 14u : 10u));
        for (size_t i = 0; i < a.size(); ++i) {
          CHECK(a[i].id == b[i].id);
          CHECK(a[i].shape == b[i].shape);
          CHECK(a[i].fan_in == b[i].fan_in);
          CHECK(a[i].fan_out == b[i].fan_out);
          CHECK(a[i].init == b[i].init);
        }
      }
    }
  }
  // With the prototype path (state S_PROTO) the body's logits become
  // nn_logits in both.
  model::Dims builtin = digits_dims(model::Task::Multiclass, true, UMLOS_DTYPE_F64);
  builtin.equations = {"z0 + 1", "sin(z1)"};
  builtin.eq_output = {0, 3};
  model::Dims declared = builtin;
  declared.model_ir = bytes;
  const ir::Graph g = model::build(declared);
  check_same_graph(model::build(builtin), g);
  CHECK(g.producer("nn_logits") != nullptr);
  CHECK(g.producer("logits")->instr == "add");
}

TEST_CASE("a model IR body takes its extents from the run and its own dims, and its parameters' init",
          "[model][modelir]") {
  const model::Dims d = small_dims(kSmallBody);
  const ir::Graph g = model::build(d);
  CHECK(g.decl("W")->shape == umlos::sdk::Shape{3, 2});
  CHECK(g.producer("logits")->output_shape == umlos::sdk::Shape{2, 4});
  const std::vector<model::Param> ps = model::parameters(d);
  REQUIRE(ps.size() == 4);
  CHECK(ps[0].init == model::Init::Glorot);
  CHECK(ps[0].fan_in == 3);
  CHECK(ps[3].id == "g");
  CHECK(ps[3].init == model::Init::Ones);
  // Inference leaves out the decoder and the parameters only it reads.
  model::Dims inference = d;
  inference.training = false;
  CHECK(model::parameters(inference).size() == 3);
  CHECK(model::build(inference).producer("recon") == nullptr);
}

TEST_CASE("a model IR body that breaks the interface is refused naming the tensor or node", "[model][modelir]") {
  check_body_refused(replaced(kSmallBody, "  - {id: W,", "  - {id: q, role: input, shape: [B, D]}\n  - {id: W,"),
                     UMLOS_INVALID_IR, {"tensor 'q'", "inputs are x", "z"});
  check_body_refused(
      replaced(replaced(replaced(kSmallBody, "  - {id: z, role: input, shape: [B, p]}\n", ""), "[z, V]", "[x, V]"),
               "[z, U]", "[x, U]"),
      UMLOS_INVALID_IR, {"declare input 'z'"});
  check_body_refused(replaced(kSmallBody, "inputs: [x, W]", "inputs: [z, W]"), UMLOS_INVALID_IR,
                     {"node 0 ('mu')", "segment encode reads 'z'"});
  check_body_refused(replaced(kSmallBody, "inputs: [z, V]", "inputs: [mu, V]"), UMLOS_INVALID_IR,
                     {"node 2 ('dec')", "segment decode reads 'mu'"});
  check_body_refused(replaced(kSmallBody, "output: {id: logits,", "output: {id: scores,"), UMLOS_INVALID_IR,
                     {"no head node produces 'logits'"});
  check_body_refused(replaced(kSmallBody, "output: {id: logvar, shape: [B, p]}", "output: {id: logvar, shape: [B, H]}"),
                     UMLOS_SHAPE_MISMATCH, {"output 'logvar' is [2,4]", "the run needs [2,2]"});
  check_body_refused(
      replaced(replaced(kSmallBody, "output: {id: dec,", "output: {id: sigma,"), "inputs: [dec]", "inputs: [sigma]"),
      UMLOS_INVALID_IR, {"'sigma'", "taken by what the spec 004 operators add"});
  check_body_refused(replaced(kSmallBody, "shape: [p, C]}", "shape: [p, K]}"), UMLOS_INVALID_IR,
                     {"extent 'K' is not defined", "B, C, D, H, p"});
  check_body_refused(replaced(kSmallBody, "dims: {H: 4}", "dims: {H: 4, B: 9}"), UMLOS_INVALID_IR,
                     {"dims.B", "bound by the caller"});
  check_body_refused(kSmallBody + "loss: logits\n", UMLOS_INVALID_IR, {"model_ir.graph.loss", "spec 004"});
  check_body_refused(replaced(kSmallBody, "init: ones", "init: glorot_uniform"), UMLOS_INVALID_IR,
                     {"parameter 'g'", "rank-2"});
  check_body_refused(replaced(kSmallBody, "dims: {H: 4}", "dtype: f32\ndims: {H: 4}"), UMLOS_INVALID_IR,
                     {"compute_dtype (f64)"});
  check_body_refused(replaced(kSmallBody, "segment: head, instr: mul", "segment: loss, instr: mul"), UMLOS_INVALID_IR,
                     {"node 5", "segment 'loss'"});
}

namespace {

const std::string kShippedIrPath = "\"../../manifests/models/digits_vae.yaml\"";

std::string shipped_ir_digest() { return umlos::to_hex(umlos::sha256(shipped_ir_text())); }

// The pinned digits manifest with its model_ir entry replaced by `entry`
// (the lines after `model_ir:`).
std::string digits_with_model_ir(const std::string& tag) {
  return variant("digits", tag,
                 {{"  path: " + kShippedIrPath, "  __MODEL_IR__"}, {"  sha256: " + shipped_ir_digest() + "\n", ""}});
}

std::string with_entry(const std::string& manifest, const std::string& entry) {
  std::string text = read_text(manifest);
  const size_t at = text.find("  __MODEL_IR__");
  REQUIRE(at != std::string::npos);
  const size_t end = text.find('\n', at);
  text.replace(at, end - at, entry);
  write_text(manifest, text);
  return manifest;
}

std::string manifest_hash(const std::string& manifest) {
  const CommandResult r = run_umlos("manifest hash '" + manifest + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  return r.output;
}

}  // namespace

TEST_CASE("a model IR file whose bytes differ from the pin is refused before any module code runs",
          "[model][manifest]") {
  const std::string dir = temp_dir("model-ir-pin");
  const std::string copy = dir + "/body.yaml";
  write_text(copy, replaced(shipped_ir_text(), "dims: {H: 128, Hh: 128}", "dims: {H: 256, Hh: 128}"));
  const std::string m =
      with_entry(digits_with_model_ir("ir_edited"), "  path: \"" + copy + "\"\n  sha256: " + shipped_ir_digest());
  const CommandResult r = run_umlos_env("UML_OS_ROOT='" + dir + "/root'", "run -q '" + m + "'");
  INFO(r.output);
  CHECK(r.exit_status == 56);
  CHECK_THAT(r.output, Catch::Contains("DATA_HASH_MISMATCH"));
  CHECK_THAT(r.output, Catch::Contains("key 'model_ir.sha256'"));
  CHECK_THAT(r.output, Catch::Contains(copy));
  CHECK_THAT(r.output, Catch::Contains("the manifest pins " + shipped_ir_digest()));
  CHECK_FALSE(std::filesystem::exists(dir + "/root"));
}

TEST_CASE("a model IR path that is a FIFO or missing is refused naming the manifest key", "[model][manifest]") {
  const std::string dir = temp_dir("model-ir-fifo");
  const std::string fifo = dir + "/body.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string m =
      with_entry(digits_with_model_ir("ir_fifo"), "  path: \"" + fifo + "\"\n  sha256: " + shipped_ir_digest());
  CommandResult r = run_umlos("manifest hash '" + m + "'");
  INFO(r.output);
  CHECK(r.exit_status != 0);
  CHECK_THAT(r.output, Catch::Contains("key 'model_ir.path'"));
  CHECK_THAT(r.output, Catch::Contains("FIFO"));
  const std::string m2 = with_entry(digits_with_model_ir("ir_missing"),
                                    "  path: \"" + dir + "/none.yaml\"\n  sha256: " + shipped_ir_digest());
  r = run_umlos("manifest hash '" + m2 + "'");
  CHECK(r.exit_status != 0);
  CHECK_THAT(r.output, Catch::Contains("key 'model_ir.path'"));
  CHECK_THAT(r.output, Catch::Contains("none.yaml"));
}

TEST_CASE("the manifest hash covers the model graph, written inline or as a pinned file", "[model][manifest]") {
  const std::string file_form = pinned_manifest("digits");
  std::string inline_entry = "  graph:\n";
  std::istringstream lines(shipped_ir_text());
  for (std::string line; std::getline(lines, line);) inline_entry += "    " + line + "\n";
  const std::string inline_form = with_entry(digits_with_model_ir("ir_inline"), inline_entry);
  CHECK(manifest_hash(inline_form) == manifest_hash(file_form));
  // One width edited: another experiment.
  const std::string wider =
      with_entry(digits_with_model_ir("ir_inline_wider"), replaced(inline_entry, "H: 128,", "H: 96,"));
  CHECK(manifest_hash(wider) != manifest_hash(file_form));
  // Both forms at once, or config.model_ir beside it, are refused.
  const std::string both =
      with_entry(digits_with_model_ir("ir_both"), "  sha256: " + shipped_ir_digest() + "\n" + inline_entry);
  const CommandResult r = run_umlos("manifest hash '" + both + "'");
  INFO(r.output);
  CHECK(r.exit_status == 30);
  CHECK_THAT(r.output, Catch::Contains("key 'model_ir'"));
}

TEST_CASE("manifest pin writes the model IR file's digest and its path relative to the output", "[model][manifest]") {
  const std::string dir = temp_dir("model-ir-pin-tool");
  std::string text = read_text(pinned_manifest("digits"));
  text = replaced(text, "sha256: " + shipped_ir_digest(), "sha256: unpinned");
  // Beside the pinned copy, so its relative paths resolve; pin rewrites
  // them all for the output's folder.
  const std::string unpinned = std::string(UMLOS_BINARY_DIR) + "/manifests/test_digits_ir_unpinned.yaml";
  write_text(unpinned, text);
  const std::string out = dir + "/sub/digits.yaml";
  const CommandResult r = run_umlos("manifest pin '" + unpinned + "' -o '" + out + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const std::string pinned = read_text(out);
  CHECK_THAT(pinned, Catch::Contains("sha256: " + shipped_ir_digest()));
  const std::string relative =
      std::filesystem::path(std::string(UMLOS_SOURCE_DIR) + "/manifests/models/digits_vae.yaml")
          .lexically_normal()
          .lexically_relative(std::filesystem::path(dir + "/sub").lexically_normal())
          .string();
  CHECK_THAT(pinned, Catch::Contains("path: \"" + relative + "\""));
  manifest_hash(out);  // loads: the digest verifies
  // After the model changed, pin replaces the stale digest.
  const std::string body = dir + "/body.yaml";
  write_text(body, replaced(shipped_ir_text(), "H: 128,", "H: 96,"));
  write_text(unpinned, replaced(replaced(text, "\"../../manifests/models/digits_vae.yaml\"", "\"" + body + "\""),
                                "sha256: unpinned", "sha256: " + shipped_ir_digest()));
  const CommandResult again = run_umlos("manifest pin '" + unpinned + "' -o '" + out + "'");
  INFO(again.output);
  REQUIRE(again.exit_status == 0);
  CHECK_THAT(read_text(out), Catch::Contains("sha256: " + umlos::to_hex(umlos::sha256(read_text(body)))));
  manifest_hash(out);
}

namespace {

// The pinned digits manifest for `steps` steps with `body` (IR text) inline
// and `extra_module` (pinned) loaded first.
std::string digits_with_body(const std::string& tag, const std::string& body, int steps,
                             const std::string& extra_module = "") {
  std::string entry = "  graph:\n";
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) entry += "    " + line + "\n";
  const std::string m = with_entry(digits_with_model_ir(tag), entry);
  std::string text = replaced(read_text(m), "max_steps: 1500", "max_steps: " + std::to_string(steps));
  if (!extra_module.empty())
    text = replaced(text, "modules:",
                    "modules:\n  - path: \"" + extra_module +
                        "\"\n    sha256: " + umlos::to_hex(umlos::sha256(read_text(extra_module))));
  write_text(m, text);
  return m;
}

}  // namespace

TEST_CASE(
    "a manifest that edits only the digits model IR trains a deeper network to held-out accuracy of at "
    "least 0.97",
    "[model][training][slow]") {
  // The two shipped manifests differ in their name and model_ir file only.
  auto strip = [](std::string t) {
    t = t.substr(t.find("umlos_manifest: 1"));
    t = replaced(t, "name: digits_deep", "name: digits");
    return replaced(t, "/digits_deep.yaml", "/digits_vae.yaml");
  };
  CHECK(strip(read_text(std::string(UMLOS_SOURCE_DIR) + "/manifests/digits_deep.yaml")) ==
        read_text(std::string(UMLOS_SOURCE_DIR) + "/manifests/digits.yaml")
            .substr(read_text(std::string(UMLOS_SOURCE_DIR) + "/manifests/digits.yaml").find("umlos_manifest: 1")));
  Run r = run(pinned_manifest("digits_deep"), "digits-deep");
  INFO(r.result.output);
  REQUIRE(r.result.exit_status == 0);
  const std::vector<nlohmann::json> recs = records(r.trace());
  const nlohmann::json& end = recs.back();
  REQUIRE(end["record"] == "run_end");
  CHECK(end["t"] == 1500);
  CHECK(end["val_accuracy"].get<double>() >= 0.97);
  // The run's state holds the deeper encoder's second layer.
  CHECK_THAT(read_text(r.dir + "/value_arenas.json"), Catch::Contains("\"theta.enc.W2\""));
}

TEST_CASE("a model IR using a module's activation primitive trains digits, and replays identically",
          "[model][primitives][modules]") {
  const std::string swish_body =
      replaced(shipped_ir_text(), "instr: relu, inputs: [enc_h_pre]", "instr: swish, inputs: [enc_h_pre]");
  const std::string m = digits_with_body("ir_swish", swish_body, 60, module_path("test_swish"));
  Run a = run(m, "swish-a"), b = run(m, "swish-b");
  INFO(a.result.output << b.result.output);
  REQUIRE(a.result.exit_status == 0);
  REQUIRE(b.result.exit_status == 0);
  const std::vector<std::string> fa = state_fps(a.trace()), fb = state_fps(b.trace());
  CHECK(fa.size() == 60);
  CHECK(fa == fb);
  const nlohmann::json header = records(a.trace()).front();
  CHECK(header["module_primitives"] == nlohmann::json({{"swish", "test_swish"}, {"swish_grad", "test_swish"}}));
  // The same body with relu is another model: other states from step 1.
  const std::string relu = digits_with_body("ir_relu60", shipped_ir_text(), 60);
  Run c = run(relu, "relu-60");
  REQUIRE(c.result.exit_status == 0);
  CHECK(state_fps(c.trace()).at(0) != fa.at(0));
  // Without the module the body is refused before t = 1, naming the node.
  const std::string without = digits_with_body("ir_swish_nomodule", swish_body, 60);
  Run d = run(without, "swish-none");
  CHECK(d.result.exit_status != 0);
  CHECK_THAT(d.result.output, Catch::Contains("PRIMITIVE_UNSUPPORTED"));
  CHECK_THAT(d.result.output, Catch::Contains("swish"));
  if (std::filesystem::exists(d.trace())) CHECK(state_fps(d.trace()).empty());
}

TEST_CASE("a model IR file rewritten while manifests load is refused or gives the pinned graph, never another",
          "[model][manifest][security]") {
  const std::string dir = temp_dir("model-ir-race");
  const std::string body = dir + "/body.yaml";
  const std::string pinned_text = shipped_ir_text();
  write_text(body, pinned_text);
  const std::string m =
      with_entry(digits_with_model_ir("ir_race"), "  path: \"" + body + "\"\n  sha256: " + shipped_ir_digest());
  const std::string expected = manifest_hash(m);
  // A writer flips one width in place between 128 and 256 (same length).
  const size_t at = pinned_text.find("H: 128,");
  REQUIRE(at != std::string::npos);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const int fd = ::open(body.c_str(), O_WRONLY);
    for (int i = 0; !stop; ++i) (void)!::pwrite(fd, i % 2 ? "128" : "256", 3, static_cast<off_t>(at + 3));
    ::close(fd);
  });
  int accepted = 0, refused = 0;
  for (int i = 0; i < 40; ++i) {
    const CommandResult r = run_umlos("manifest hash '" + m + "'");
    if (r.exit_status == 0) {
      ++accepted;
      CHECK(r.output == expected);  // the pinned graph, nothing else
    } else {
      ++refused;
      CHECK(r.exit_status == 56);
      CHECK_THAT(r.output, Catch::Contains("DATA_HASH_MISMATCH"));
    }
  }
  stop = true;
  writer.join();
  INFO("accepted " << accepted << ", refused " << refused);
  CHECK(accepted + refused == 40);
}

TEST_CASE("a run folder keeps the model IR bytes it ran and replays from them alone", "[model][replay]") {
  const std::string m = variant("digits", "ir_replay", {{"max_steps: 1500", "max_steps: 20"}});
  Run r = run_ok(m, "ir-replay");
  CHECK(read_text(r.dir + "/model_ir.yaml") == shipped_ir_text());
  CHECK_THAT(read_text(r.dir + "/manifest.yaml"), Catch::Contains("path: \"model_ir.yaml\""));
  CommandResult v = run_umlos("replay --verify '" + r.dir + "'");
  INFO(v.output);
  CHECK(v.exit_status == 0);
  CHECK_THAT(v.output, Catch::Contains("identical"));
  // The saved IR edited: the folder's own pin refuses it.
  write_text(r.dir + "/model_ir.yaml", replaced(shipped_ir_text(), "H: 128,", "H: 129,"));
  v = run_umlos("replay --verify '" + r.dir + "'");
  CHECK(v.exit_status == 56);
  CHECK_THAT(v.output, Catch::Contains("DATA_HASH_MISMATCH"));
}

TEST_CASE("a model IR declaring a width beyond the memory budget is refused before the parameters are allocated",
          "[model][security]") {
  const std::string huge = replaced(shipped_ir_text(), "H: 128,", "H: 100000000000,");
  const std::string m = digits_with_body("ir_huge", huge, 3);
  Run r = run(m, "ir-huge");
  INFO(r.result.output);
  CHECK(r.result.exit_status == 53);
  CHECK_THAT(r.result.output, Catch::Contains("QUOTA_EXCEEDED"));
  CHECK_THAT(r.result.output, Catch::Contains("theta.enc.W1"));
  CHECK_THAT(r.result.output, Catch::Contains("budgets.memory_bytes"));
}

TEST_CASE("a model IR body's constants carry their values into training", "[model]") {
  // The head's pre-activations scaled by a constant of the body.
  std::string body = replaced(shipped_ir_text(), "  - {id: head.W1,",
                              "  - {id: scale, role: constant, shape: [1], value: 0.5}\n  - {id: head.W1,");
  body = replaced(body, "inputs: [head_h_mm, head.b1], output: {id: head_h_pre,",
                  "inputs: [head_h_mm, head.b1], output: {id: head_h_pre0,");
  body = replaced(body, "  - {node_id: 17,",
                  "  - {node_id: 26, segment: head, instr: mul, inputs: [head_h_pre0, scale], output: {id: head_h_pre, "
                  "shape: [B, Hh]}}\n  - {node_id: 17,");
  const std::string m = digits_with_body("ir_constant", body, 8);
  Run a = run(m, "ir-constant");
  INFO(a.result.output);
  REQUIRE(a.result.exit_status == 0);
  const std::string plain = digits_with_body("ir_plain8", shipped_ir_text(), 8);
  Run b = run(plain, "ir-plain8");
  REQUIRE(b.result.exit_status == 0);
  CHECK(state_fps(a.trace()).size() == 8);
  CHECK(state_fps(a.trace()).back() != state_fps(b.trace()).back());
}

TEST_CASE("the augment action fits its equations to a model IR body's own head", "[model][symbolic][slow]") {
#ifndef UMLOS_TEST_HAVE_SYMBOLIC
  UMLOS_SKIP("the symbolic module is not built");
#else
  // digits_augment with the deeper GELU body, its head's parameters named
  // cls.* instead of head.*: ActivateNonParamModule_v1 must evaluate that
  // head, not the built-in relu head of theta.head.W1 ... theta.head.b2.
  std::string body = read_text(std::string(UMLOS_SOURCE_DIR) + "/manifests/models/digits_deep.yaml");
  for (size_t at = body.find("head."); at != std::string::npos; at = body.find("head.", at))
    body.replace(at, 5, "cls.");
  std::string entry = "model_ir:\n  graph:\n";
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) entry += "    " + line + "\n";
  const std::string m =
      variant("digits_augment", "ir_deep", {{"max_steps: 600", "max_steps: 310"}, {"\ntmmu:", "\n" + entry + "tmmu:"}});
  Run r = run_ok(m, "augment-ir");
  const std::vector<nlohmann::json> recs = records(r.trace());
  REQUIRE(recs.back()["record"] == "run_end");
  CHECK(recs.back()["t"] == 310);
  bool proto = false;
  for (const nlohmann::json& rec : recs)
    if (rec["record"] == "iter" && rec["t"] == 305) proto = rec["state"] == "S_PROTO";
  CHECK(proto);
#endif
}
