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

sdk::Module describe() {
  return sdk::Module("test_config_tree", "1")
      .add(sdk::Operator("Test.Config.Summarize_v1")
               .summary("reads config.graph as a tree")
               .pure()
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(summarize));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
