// value_writer_support.hpp — driving the test operator Test.ValueWriter_v1
// (tests/modules/value_writer.cpp) from a Host: one call in a given mode,
// and the values of lz.v it leaves in the run state.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "host.hpp"
#include "manifest.hpp"

namespace umlos_test {

// Calls `op` at iteration `t` with config value_writer.mode = `mode`.
inline void call_value_writer(umlos::Host& host, const umlos_operator_desc* op, const std::string& mode, int64_t t) {
  const umlos::Manifest m = umlos::parse_manifest(
      "umlos_manifest: 1\nname: zeros\nmodules:\n  - {path: x.so, sha256: unpinned}\n"
      "driver: {name: cpu_driver}\noperators: {}\nconfig:\n  value_writer: {mode: " +
          mode + "}\n",
      "zeros.yaml", "/tmp", true);
  host.set_operator_config(m.config);
  host.set_iteration(t);
  host.call_operator(op);
}

// lz.v's values as the run state holds them.
inline std::vector<double> value_writer_output(umlos::Host& host) {
  const std::vector<uint8_t> b = host.to_host(*host.values().at("lz.v")).data;
  std::vector<double> v(b.size() / 8);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

}  // namespace umlos_test
