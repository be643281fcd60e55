// config_tree.cpp — an SDK module reading structured configuration (a
// small graph written in the manifest) through services->config_cbor
// (ABI 1.2) and sdk::cbor. Output loss_total = sum of node ids times the
// number of edges, so the runner test can check it in the trace.
#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;

namespace {

void summarize(sdk::Context& c) {
  std::optional<sdk::cbor::Value> graph = sdk::cbor::config_tree(c, "graph");
  if (!graph) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'graph' is required");
  int64_t id_sum = 0;
  for (const sdk::cbor::Value& node : graph->at("nodes").items()) id_sum += node.at("id").as_int();
  const double edges = static_cast<double>(graph->at("edges").items().size());
  const double scale = graph->at("scale").as_double();
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}),
          std::vector<double>{static_cast<double>(id_sum) * edges * scale});
}

// Value families ("fam.in.*"): names come from the manifest, as the
// ModelIR executor's tensor names will come from its graph.
std::vector<std::string> family_names(sdk::Context& c) {
  std::vector<std::string> names;
  if (std::optional<sdk::cbor::Value> v = sdk::cbor::config_tree(c, "family"))
    for (const sdk::cbor::Value& n : v->items()) names.push_back(n.as_text());
  return names;
}

void family_make(sdk::Context& c) {
  double x = 1.0;
  for (const std::string& n : family_names(c)) {
    c.write(c.output(("fam.in." + n).c_str(), UMLOS_DTYPE_F64, {2}), std::vector<double>{x, 10 * x});
    x += 1.0;
  }
}

void family_double(sdk::Context& c) {
  double total = 0.0;
  for (const std::string& n : family_names(c)) {
    std::vector<double> v = c.read<double>(c.input(("fam.in." + n).c_str()));
    for (double& e : v) {
      e *= 2.0;
      total += e;
    }
    c.write(c.output(("fam.out." + n).c_str(), UMLOS_DTYPE_F64, {2}), v);
  }
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{total});
}

sdk::Module describe() {
  return sdk::Module("test_config_tree", "1")
      .add(sdk::Operator("Test.Config.Summarize_v1")
               .summary("reads config.graph as a tree")
               .pure()
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(summarize))
      .add(sdk::Operator("Test.Family.Make_v1")
               .summary("creates fam.in.<name> for each name of config.family")
               .pure()
               .output("fam.in.*", UMLOS_DTYPE_F64, sdk::Dims{2}, UMLOS_VALUE_PERSISTENT)
               .run(family_make))
      .add(sdk::Operator("Test.Family.Double_v1")
               .summary("fam.out.<name> = 2 * fam.in.<name>; loss_total = their sum")
               .pure()
               .input("fam.in.*", UMLOS_DTYPE_F64, sdk::Dims{2})
               .output("fam.out.*", UMLOS_DTYPE_F64, sdk::Dims{2})
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(family_double));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
