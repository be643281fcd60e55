// exec_inputs.cpp — reading `umlos exec`'s IR file and --inputs JSON.
#include "exec_inputs.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>

#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "umlos_names.h"

namespace umlos {
using json = nlohmann::json;

namespace {

int32_t dtype_of(const std::string& name, const std::string& where) {
  const int32_t d = umlos_dtype_from_name(name.c_str());          // the one dtype table, abi/umlos_names.h
  const bool whole_name = d >= 0 && name == umlos_dtype_name(d);  // no NUL inside the name
  if (whole_name && (d == UMLOS_DTYPE_F64 || d == UMLOS_DTYPE_F32 || d == UMLOS_DTYPE_I64 || d == UMLOS_DTYPE_I32))
    return d;
  throw Failure(UMLOS_INVALID_ARGUMENT, where + ": dtype '" + name + "', expected f64, f32, i64 or i32");
}

}  // namespace

// The IR file as a CBOR value. The YAML reader sees the document embedded in
// a minimal manifest (8 wrapper lines, 4 columns of indentation): positions
// in its messages are mapped back to the file's own lines and columns, and
// key paths lose the wrapper's `config.value.` prefix.
cbor::Value read_ir(const std::string& file) {
  const std::string text = read_text_file(file);
  try {
    return parse_yaml_value(text, file);
  } catch (const Failure& f) {
    constexpr long kLines = 8, kColumns = 4;
    std::string msg = f.what();
    const std::string head = file + ":";
    if (msg.rfind(head, 0) == 0) {
      std::smatch m;
      const std::string rest = msg.substr(head.size());
      if (std::regex_search(rest, m, std::regex("^(\\d+):(\\d+):")) && m.position(0) == 0) {
        const long line = std::max(1L, std::stol(m[1]) - kLines);
        const long col = std::max(1L, std::stol(m[2]) - kColumns);
        msg = head + std::to_string(line) + ":" + std::to_string(col) + ":" + rest.substr(m.length(0));
      }
    }
    msg = std::regex_replace(msg, std::regex("key 'config\\.value\\.?"), "key '");
    std::smatch m;
    if (std::regex_search(msg, m, std::regex("first at line (\\d+), column (\\d+)"))) {
      msg = m.prefix().str() + "first at line " + std::to_string(std::max(1L, std::stol(m[1]) - kLines)) + ", column " +
            std::to_string(std::max(1L, std::stol(m[2]) - kColumns)) + m.suffix().str();
    }
    throw Failure(f.code(), msg);
  }
}

// --inputs FILE: {"<tensor id>": {"dtype": "f64", "shape": [..], "values": [..]}, ...}
// (the format `exec --json` prints outputs in). dtype defaults to the IR's
// declaration, shape must equal it.
void apply_inputs(Host& host, const cbor::Value& ir, const std::string& file) {
  json doc;
  std::string current;  // the tensor being read, for a number out of range
  const json::parser_callback_t track = [&current](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) current = parsed.get<std::string>();
    return true;
  };
  try {
    doc = json::parse(read_text_file(file), track);
  } catch (const json::out_of_range& e) {
    // e.g. 1e400: a number no binary64 holds.
    throw Failure(UMLOS_INVALID_ARGUMENT, file + (current.empty() ? "" : ": tensor '" + current + "'") +
                                              ": a number out of the range of f64 (" + e.what() + ")");
  } catch (const json::exception& e) {
    throw Failure(UMLOS_INVALID_ARGUMENT, file + ": not JSON: " + e.what());
  }
  if (!doc.is_object()) throw Failure(UMLOS_INVALID_ARGUMENT, file + ": expected an object of named tensors");
  int32_t graph_dtype = UMLOS_DTYPE_F64;
  if (const cbor::Value* d = ir.find("dtype")) graph_dtype = dtype_of(d->as_text(), "ir.dtype");
  for (auto& [id, t] : doc.items()) {
    const std::string where = file + ": tensor '" + id + "'";
    const cbor::Value* decl = nullptr;
    for (const cbor::Value& d : ir.find("tensors")->as_array()) {
      if (d.find("id") && d.find("id")->as_text() == id) decl = &d;
    }
    if (!decl) throw Failure(UMLOS_INVALID_ARGUMENT, where + ": the IR declares no such tensor");
    if (!t.is_object() || !t.contains("values") || !t["values"].is_array()) {
      throw Failure(UMLOS_INVALID_ARGUMENT, where + ": expected {\"dtype\", \"shape\", \"values\": [...]}");
    }
    const std::string role = decl->find("role")->as_text();
    if (decl->find("value")) throw Failure(UMLOS_INVALID_ARGUMENT, where + ": a constant with a value in the IR");
    int32_t dtype = decl->find("dtype") ? dtype_of(decl->find("dtype")->as_text(), where) : graph_dtype;
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string& key = it.key();
      if (key != "dtype" && key != "shape" && key != "values") {
        throw Failure(UMLOS_INVALID_ARGUMENT, where + ": unknown key '" + key + "' (allowed: dtype, shape, values)");
      }
    }
    if (t.contains("dtype") && !t["dtype"].is_string()) {
      throw Failure(UMLOS_INVALID_ARGUMENT, where + ": dtype " + t["dtype"].dump() + ", expected a string");
    }
    if (t.contains("shape")) {
      bool ok = t["shape"].is_array();
      for (const json& e : ok ? t["shape"] : json::array()) {
        ok = ok && e.is_number_integer() && (!e.is_number_unsigned() || e.get<uint64_t>() <= uint64_t{INT64_MAX});
      }
      if (!ok)
        throw Failure(UMLOS_INVALID_ARGUMENT,
                      where + ": shape " + t["shape"].dump() + ", expected an array of integers");
    }
    if (t.contains("dtype")) {
      const int32_t given = dtype_of(t["dtype"].get<std::string>(), where);
      if (given != dtype) {
        throw Failure(UMLOS_SHAPE_MISMATCH,
                      where + ": dtype " + dtype_name(given) + ", the IR declares " + dtype_name(dtype));
      }
    }
    std::vector<int64_t> shape;
    for (const cbor::Value& e : decl->find("shape")->as_array()) shape.push_back(e.as_int64());
    if (t.contains("shape") && t["shape"].get<std::vector<int64_t>>() != shape) {
      throw Failure(UMLOS_SHAPE_MISMATCH,
                    where + ": shape " + t["shape"].dump() + ", the IR declares " + json(shape).dump());
    }
    HostTensor h;
    h.dtype = dtype;
    h.shape.rank = static_cast<uint32_t>(shape.size());
    uint64_t n = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      h.shape.dims[i] = shape[i];
      if (shape[i] < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(shape[i]), &n)) {
        throw Failure(UMLOS_INVALID_ARGUMENT, where + ": shape " + json(shape).dump() + " has more elements than 2^64");
      }
    }
    const json& values = t["values"];
    if (values.size() != n) {
      throw Failure(UMLOS_SHAPE_MISMATCH, where + ": " + std::to_string(values.size()) + " values, shape " +
                                              json(shape).dump() + " holds " + std::to_string(n));
    }
    const size_t es = dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_I32 ? 4 : 8;
    h.data.resize(n * es);
    for (uint64_t i = 0; i < n; ++i) {
      const json& e = values[i];
      const std::string at = where + ": value " + std::to_string(i) + " (" + e.dump() + ")";
      if (!e.is_number()) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is not a number");
      if (dtype == UMLOS_DTYPE_F64) {
        const double v = e.get<double>();
        std::memcpy(h.data.data() + 8 * i, &v, 8);
      } else if (dtype == UMLOS_DTYPE_F32) {
        const double d = e.get<double>();
        const float v = static_cast<float>(d);
        if (!std::isfinite(v)) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is out of the range of f32");
        std::memcpy(h.data.data() + 4 * i, &v, 4);
      } else {
        // Integers only, in range: a fraction or 1e30 would be truncated or undefined.
        const bool i64 = dtype == UMLOS_DTYPE_I64;
        const int64_t lo = i64 ? INT64_MIN : INT32_MIN, hi = i64 ? INT64_MAX : INT32_MAX;
        const bool ok = e.is_number_unsigned()
                            ? e.get<uint64_t>() <= static_cast<uint64_t>(hi)
                            : e.is_number_integer() && e.get<int64_t>() >= lo && e.get<int64_t>() <= hi;
        if (!ok) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is not an integer of " + dtype_name(dtype));
        if (i64) {
          const int64_t v = e.get<int64_t>();
          std::memcpy(h.data.data() + 8 * i, &v, 8);
        } else {
          const int32_t v = static_cast<int32_t>(e.get<int64_t>());
          std::memcpy(h.data.data() + 4 * i, &v, 4);
        }
      }
    }
    const std::string name = (role == "parameter" ? "model.param." : "model.input.") + id;
    host.put_value(name, host.from_host(h));
  }
}

}  // namespace umlos
