// intervals.cpp — reading umlos.intervals.v1 JSON / .json.gz and MiniMalloc CSV.
#include "intervals.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "error.hpp"
#include "fsutil.hpp"
#include "phase_timer.hpp"

namespace umlos::plan {
namespace {

using nlohmann::json;

[[noreturn]] void bad(umlos_status code, const std::string& where, const std::string& what) {
  throw Failure(code, where + ": " + what);
}

std::string kind_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_float()) return "the non-integer " + v.dump();
  if (v.is_number()) return v.dump();
  if (v.is_string()) return "the string " + v.dump();
  if (v.is_array()) return "an array";
  return "an object";
}

// An unsigned integer field; floats and out-of-range values are refused
// (a JSON number beyond uint64 is parsed as a float: report overflow).
uint64_t get_u64(const json& obj, const char* key, const std::string& where, bool required, uint64_t dflt) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) bad(UMLOS_INVALID_IR_SHAPES, where, std::string("missing key '") + key + "'");
    return dflt;
  }
  const json& v = *it;
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    std::ostringstream m;
    m << "'" << key << "' must be >= 0" << (std::string(key) == "size" ? " (and > 0)" : "") << ", got " << v.dump();
    bad(UMLOS_INVALID_IR_SHAPES, where, m.str());
  }
  if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() >= 18446744073709551616.0)
    bad(UMLOS_ALLOCATION_OVERFLOW, where, std::string("'") + key + "' = " + v.dump() + " does not fit in uint64");
  bad(UMLOS_INVALID_IR_SHAPES, where, std::string("'") + key + "' must be an integer, got " + kind_of(v));
}

int64_t get_i64(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(UMLOS_INVALID_IR_SHAPES, where, std::string("missing key '") + key + "'");
  const json& v = *it;
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      bad(UMLOS_ALLOCATION_OVERFLOW, where, std::string("'") + key + "' = " + v.dump() + " does not fit in int64");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  bad(UMLOS_INVALID_IR_SHAPES, where, std::string("'") + key + "' must be an integer step, got " + kind_of(v));
}

bool get_bool(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return false;
  if (!it->is_boolean())
    bad(UMLOS_INVALID_IR_SHAPES, where, std::string("'") + key + "' must be true or false, got " + kind_of(*it));
  return it->get<bool>();
}

void check_alignment(uint64_t a, const std::string& where) {
  if (a == 0 || (a & (a - 1)) != 0) {
    std::ostringstream m;
    m << "alignment must be a power of two, got " << a;
    bad(UMLOS_ALIGNMENT_VIOLATION, where, m.str());
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void sort_and_check_ids(IntervalSet& set) {
  std::sort(set.tensors.begin(), set.tensors.end(),
            [](const TensorSpec& a, const TensorSpec& b) { return a.id < b.id; });
  for (size_t i = 1; i < set.tensors.size(); ++i)
    if (set.tensors[i].id == set.tensors[i - 1].id)
      bad(UMLOS_INVALID_IR_SHAPES, set.source, "duplicate tensor id '" + set.tensors[i].id + "'");
}

// Builds a json value from SAX events (what json::parse does; a repeated
// key keeps its last value, as there).
class DomBuilder {
 public:
  explicit DomBuilder(json& root) : root_(root) {}
  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) {
    put(json::object());
    stack_.push_back(last_);
    return true;
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    put(json::array());
    stack_.push_back(last_);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool done() const { return stack_.empty(); }

 private:
  // Open containers are never moved: an array only grows after its last
  // element (the one that may be open) has been closed.
  bool put(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      last_ = &root_;
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
      last_ = &stack_.back()->back();
    } else {
      json& slot = (*stack_.back())[key_];
      slot = std::move(v);
      last_ = &slot;
    }
    return true;
  }
  json& root_;
  json* last_ = nullptr;
  std::vector<json*> stack_;
  std::string key_;
};

// Reads an interval document in two streaming passes instead of one DOM of
// every tensor (at 10^6 tensors the DOM took ~5 GB and most of the command's
// time): pass 1 builds the document without the elements of the top-level
// "tensors" array (the header: arenas, alignment, replan policy, counted
// elements); pass 2 hands each element of that array, as a small json
// value, to `on_tensor` and drops it. With a repeated top-level "tensors"
// key the last one counts, as in json::parse.
class IntervalsSax {
 public:
  using OnTensor = std::function<void(const json&, size_t)>;
  IntervalsSax(json& header, const std::string& source) : dom_(header), source_(source) {}
  IntervalsSax(const OnTensor& on_tensor, size_t target, const std::string& source)
      : dom_(scratch_), on_tensor_(&on_tensor), target_(target), source_(source) {}
  size_t tensors_keys() const { return tensors_keys_; }
  size_t elements() const { return elements_; }

  bool null() {
    return value([&](DomBuilder& d) { return d.null(); });
  }
  bool boolean(bool b) {
    return value([&](DomBuilder& d) { return d.boolean(b); });
  }
  bool number_integer(json::number_integer_t v) {
    return value([&](DomBuilder& d) { return d.number_integer(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return value([&](DomBuilder& d) { return d.number_unsigned(v); });
  }
  bool number_float(json::number_float_t v, const std::string& s) {
    return value([&](DomBuilder& d) { return d.number_float(v, s); });
  }
  bool string(std::string& v) {
    return value([&](DomBuilder& d) { return d.string(v); });
  }
  bool binary(json::binary_t& v) {
    return value([&](DomBuilder& d) { return d.binary(v); });
  }
  bool start_object(std::size_t n) {
    return open([&](DomBuilder& d) { return d.start_object(n); });
  }
  bool start_array(std::size_t n) {
    if (depth_ == 1 && after_tensors_key_) {  // the top-level "tensors" array itself
      after_tensors_key_ = false;
      in_tensors_ = true;
      ++depth_;
      return on_tensor_ ? true : dom_.start_array(n);  // the header keeps an empty array
    }
    return open([&](DomBuilder& d) { return d.start_array(n); });
  }
  bool key(std::string& k) {
    if (depth_ == 1) {
      after_tensors_key_ = (k == "tensors");
      if (after_tensors_key_) ++tensors_keys_;
    }
    if (in_tensors_) return element_ ? element_->key(k) : true;
    return on_tensor_ ? true : dom_.key(k);
  }
  bool end_object() {
    return close([&](DomBuilder& d) { return d.end_object(); });
  }
  bool end_array() {
    if (in_tensors_ && depth_ == 2) {  // the end of the top-level "tensors" array
      in_tensors_ = false;
      --depth_;
      return on_tensor_ ? true : dom_.end_array();
    }
    return close([&](DomBuilder& d) { return d.end_array(); });
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    bad(UMLOS_INVALID_ARGUMENT, source_, std::string("not valid JSON: ") + e.what());
  }

 private:
  bool targeted() const { return on_tensor_ && tensors_keys_ == target_; }
  // A scalar: into the header, or an element of the tensors array (whole, or inside one).
  template <class F>
  bool value(const F& f) {
    if (depth_ == 1) after_tensors_key_ = false;
    if (!in_tensors_) return on_tensor_ ? true : f(dom_);
    if (depth_ == 2) {  // a scalar element
      const size_t i = elements_++;
      if (targeted()) {
        json e;
        DomBuilder b(e);
        f(b);
        (*on_tensor_)(e, i);
      }
      return true;
    }
    return element_ ? f(*element_) : true;
  }
  template <class F>
  bool open(const F& f) {
    if (depth_ == 1) after_tensors_key_ = false;
    ++depth_;
    if (!in_tensors_) return on_tensor_ ? true : f(dom_);
    if (depth_ == 3) {  // an element starts
      ++elements_;
      if (targeted()) {
        element_value_ = json();
        element_.emplace(element_value_);
      }
    }
    return element_ ? f(*element_) : true;
  }
  template <class F>
  bool close(const F& f) {
    --depth_;
    if (!in_tensors_) return on_tensor_ ? true : f(dom_);
    if (!element_) return true;
    f(*element_);
    if (depth_ == 2) {  // the element is complete
      element_.reset();
      (*on_tensor_)(element_value_, elements_ - 1);
    }
    return true;
  }

  json scratch_;
  DomBuilder dom_;
  const OnTensor* on_tensor_ = nullptr;
  size_t target_ = 0;
  const std::string& source_;
  int depth_ = 0;  // open containers; the top-level object is depth 1
  bool after_tensors_key_ = false, in_tensors_ = false;
  size_t tensors_keys_ = 0, elements_ = 0;
  json element_value_;
  std::optional<DomBuilder> element_;
};

}  // namespace

IntervalSet parse_intervals_json(const std::string& text, const std::string& source) {
  json doc;
  IntervalsSax header(doc, source);
  json::sax_parse(text, &header);
  if (!doc.is_object()) bad(UMLOS_INVALID_ARGUMENT, source, "top level must be an object");
  auto fmt = doc.find("format");
  if (fmt == doc.end() || !fmt->is_string() || fmt->get<std::string>() != "umlos.intervals.v1")
    bad(UMLOS_INVALID_ARGUMENT, source,
        "'format' must be \"umlos.intervals.v1\", got " + (fmt == doc.end() ? std::string("nothing") : fmt->dump()));
  IntervalSet set;
  set.source = source;
  if (doc.contains("name") && doc["name"].is_string()) set.name = doc["name"].get<std::string>();
  if (doc.contains("mode")) {
    if (!doc["mode"].is_string()) bad(UMLOS_INVALID_ARGUMENT, source, "'mode' must be a string");
    set.mode = doc["mode"].get<std::string>();
    if (set.mode != "forward" && set.mode != "backward" && set.mode != "inference")
      bad(UMLOS_INVALID_ARGUMENT, source, "'mode' must be forward, backward or inference, got \"" + set.mode + "\"");
  }
  set.rank = get_u64(doc, "rank", source, false, 0);
  set.world_size = get_u64(doc, "world_size", source, false, 1);
  if (set.world_size == 0 || set.rank >= set.world_size) {
    std::ostringstream m;
    m << "rank must be < world_size, got rank " << set.rank << ", world_size " << set.world_size;
    bad(UMLOS_INVALID_ARGUMENT, source, m.str());
  }
  if (doc.contains("shard_spec")) set.shard_spec_json = doc["shard_spec"].dump();
  if (doc.contains("replan_policy")) {
    const json& r = doc["replan_policy"];
    if (!r.is_string() || (r.get<std::string>() != "ABORT" && r.get<std::string>() != "REPLAN_AT_SAFEPOINT"))
      bad(UMLOS_INVALID_ARGUMENT, source,
          "'replan_policy' must be \"ABORT\" or \"REPLAN_AT_SAFEPOINT\", got " + r.dump());
    set.replan_policy = r.get<std::string>();
  }
  const uint64_t default_alignment = get_u64(doc, "alignment", source, false, 128);
  check_alignment(default_alignment, source + ": top-level alignment");

  // Arenas: the spec's three (0.N) unless the file lists its own.
  if (doc.contains("arenas")) {
    const json& arenas = doc["arenas"];
    if (!arenas.is_array() || arenas.empty()) bad(UMLOS_INVALID_ARGUMENT, source, "'arenas' must be a non-empty array");
    for (size_t i = 0; i < arenas.size(); ++i) {
      const json& a = arenas[i];
      const std::string where = source + ": arenas[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("name") || !a["name"].is_string())
        bad(UMLOS_INVALID_ARGUMENT, where, "must be an object with a string 'name'");
      ArenaSpec s;
      s.name = a["name"].get<std::string>();
      s.alignment = get_u64(a, "alignment", where, false, default_alignment);
      check_alignment(s.alignment, where + " '" + s.name + "'");
      s.capacity = get_u64(a, "capacity", where, false, 0);
      s.persistent = get_bool(a, "persistent", where);
      for (const ArenaSpec& o : set.arenas)
        if (o.name == s.name) bad(UMLOS_INVALID_ARGUMENT, where, "duplicate arena '" + s.name + "'");
      set.arenas.push_back(s);
    }
  } else {
    set.arenas = {{"parameters", default_alignment, 0, true},
                  {"activations", default_alignment, 0, false},
                  {"gradients", default_alignment, 0, false}};
  }

  auto tensors = doc.find("tensors");
  if (tensors == doc.end() || !tensors->is_array()) bad(UMLOS_INVALID_ARGUMENT, source, "'tensors' must be an array");
  std::map<std::string, uint64_t> alias_numbers;
  set.tensors.reserve(header.elements());
  const IntervalsSax::OnTensor add_tensor = [&](const json& t, size_t i) {
    std::string where = source + ": tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) bad(UMLOS_INVALID_IR_SHAPES, where, "must be an object");
    TensorSpec s;
    auto id = t.find("id");
    if (id == t.end()) bad(UMLOS_INVALID_IR_SHAPES, where, "missing key 'id'");
    if (id->is_string())
      s.id = id->get<std::string>();
    else if (id->is_number_integer())
      s.id = id->dump();
    else
      bad(UMLOS_INVALID_IR_SHAPES, where, "'id' must be a string, got " + kind_of(*id));
    where += " (id '" + s.id + "')";
    std::string arena = "activations";
    if (t.contains("arena")) {
      if (!t["arena"].is_string()) bad(UMLOS_INVALID_IR_SHAPES, where, "'arena' must be a string");
      arena = t["arena"].get<std::string>();
    }
    auto ar = std::find_if(set.arenas.begin(), set.arenas.end(), [&](const ArenaSpec& a) { return a.name == arena; });
    if (ar == set.arenas.end()) {
      std::string known;
      for (const ArenaSpec& a : set.arenas) known += (known.empty() ? "" : ", ") + a.name;
      bad(UMLOS_INVALID_IR_SHAPES, where, "unknown arena '" + arena + "' (known: " + known + ")");
    }
    s.arena = static_cast<uint32_t>(ar - set.arenas.begin());
    s.actual_size = get_u64(t, "size", where, true, 0);
    if (s.actual_size == 0) bad(UMLOS_INVALID_IR_SHAPES, where, "'size' must be > 0, got 0");
    s.size = s.actual_size;
    if (t.contains("shape_envelope")) {
      // II.H: a dynamic tensor is planned at its envelope's largest size.
      const json& env = t["shape_envelope"];
      if (!env.is_object()) bad(UMLOS_INVALID_IR_SHAPES, where, "'shape_envelope' must be an object");
      const uint64_t max_size = get_u64(env, "max_size", where + ".shape_envelope", true, 0);
      if (max_size < s.actual_size) {
        std::ostringstream m;
        m << "size " << s.actual_size << " exceeds shape_envelope.max_size " << max_size
          << (set.replan_policy == "ABORT" ? " (replan_policy ABORT)" : " (replan at the next safepoint)");
        bad(UMLOS_INVALID_IR_SHAPES, where, m.str());
      }
      s.size = max_size;
    }
    s.alignment = get_u64(t, "alignment", where, false, 0);
    if (s.alignment != 0) check_alignment(s.alignment, where);
    s.begin = get_i64(t, "begin", where);
    s.end = get_i64(t, "end", where);
    if (s.end < s.begin) {
      std::ostringstream m;
      m << "end " << s.end << " < begin " << s.begin << " (expected begin <= end, inclusive steps)";
      bad(UMLOS_LIVENESS_CYCLE, where, m.str());
    }
    if (get_bool(t, "saved_for_backward", where)) {
      s.flags |= UMLOS_PLAN_SAVED_FOR_BACKWARD;
      // AnalyzeLiveness_v1: a saved tensor lives through its last backward use.
      if (t.contains("last_backward_use")) {
        const int64_t last = get_i64(t, "last_backward_use", where);
        if (last < s.begin) {
          std::ostringstream m;
          m << "last_backward_use " << last << " < begin " << s.begin;
          bad(UMLOS_LIVENESS_CYCLE, where, m.str());
        }
        s.end = std::max(s.end, last);
      }
    }
    if (get_bool(t, "in_place_write", where)) s.flags |= UMLOS_PLAN_IN_PLACE_WRITE;
    if (get_bool(t, "must_not_alias", where)) s.flags |= UMLOS_PLAN_MUST_NOT_ALIAS;
    if (t.contains("alias_group") && !t["alias_group"].is_null()) {
      const json& g = t["alias_group"];
      if (!g.is_string() && !g.is_number_integer())
        bad(UMLOS_INVALID_IR_SHAPES, where, "'alias_group' must be a string or integer");
      const std::string key = g.is_string() ? "s:" + g.get<std::string>() : "i:" + g.dump();
      auto it = alias_numbers.emplace(key, alias_numbers.size() + 1).first;
      s.alias_group = it->second;
    }
    set.tensors.push_back(std::move(s));
  };
  IntervalsSax elements(add_tensor, header.tensors_keys(), source);
  json::sax_parse(text, &elements);
  sort_and_check_ids(set);
  return set;
}

IntervalSet parse_intervals_csv(const std::string& text, const std::string& source, uint64_t alignment) {
  check_alignment(alignment, source + ": --alignment");
  IntervalSet set;
  set.source = source;
  set.name = source.substr(source.find_last_of('/') == std::string::npos ? 0 : source.find_last_of('/') + 1);
  set.arenas = {{"activations", alignment, 0, false}};
  std::istringstream in(text);
  std::string line;
  size_t line_no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    if (!header) {
      if (line != "id,lower,upper,size")
        bad(UMLOS_INVALID_ARGUMENT, where, "expected the header 'id,lower,upper,size', got '" + line + "'");
      header = true;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    if (f.size() != 4)
      bad(UMLOS_INVALID_IR_SHAPES, where, "expected 4 fields id,lower,upper,size, got " + std::to_string(f.size()));
    auto num = [&](const std::string& s, const char* name) -> uint64_t {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        bad(UMLOS_INVALID_IR_SHAPES, where + " (id '" + f[0] + "')",
            std::string("'") + name + "' must be a non-negative integer, got '" + s + "'");
      errno = 0;
      const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
      if (errno == ERANGE)
        bad(UMLOS_ALLOCATION_OVERFLOW, where + " (id '" + f[0] + "')",
            std::string("'") + name + "' = " + s + " does not fit in uint64");
      return v;
    };
    TensorSpec t;
    t.id = f[0];
    const uint64_t lower = num(f[1], "lower"), upper = num(f[2], "upper");
    t.size = t.actual_size = num(f[3], "size");
    const std::string tw = where + " (id '" + t.id + "')";
    if (t.size == 0) bad(UMLOS_INVALID_IR_SHAPES, tw, "'size' must be > 0, got 0");
    if (upper > static_cast<uint64_t>(INT64_MAX)) bad(UMLOS_ALLOCATION_OVERFLOW, tw, "'upper' does not fit in int64");
    if (upper <= lower) {
      std::ostringstream m;
      m << "half-open interval [" << lower << ", " << upper << ") is empty (expected lower < upper)";
      bad(UMLOS_LIVENESS_CYCLE, tw, m.str());
    }
    t.begin = static_cast<int64_t>(lower);
    t.end = static_cast<int64_t>(upper) - 1;  // [lower, upper) -> inclusive [lower, upper - 1]
    set.tensors.push_back(std::move(t));
  }
  if (!header) bad(UMLOS_INVALID_ARGUMENT, source, "empty file (expected the header 'id,lower,upper,size')");
  sort_and_check_ids(set);
  return set;
}

IntervalSet read_intervals(const std::string& path, uint64_t csv_alignment, PhaseTimer* timer) {
  const std::vector<uint8_t> bytes = read_file(path);
  const bool gz = ends_with(path, ".gz") || (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b);
  std::string text = gz ? gunzip(bytes, path) : std::string(bytes.begin(), bytes.end());
  if (timer) timer->mark("read");
  const std::string base = gz && ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  IntervalSet set = ends_with(base, ".csv") ? parse_intervals_csv(text, path, csv_alignment ? csv_alignment : 1)
                                            : parse_intervals_json(text, path);
  if (timer) timer->mark("parse");
  return set;
}

void make_request(const IntervalSet& set, const std::vector<std::string>& options, PlanInput& in) {
  in.arenas.clear();
  for (const ArenaSpec& a : set.arenas) {
    umlos_plan_arena pa{};
    pa.name = a.name.c_str();
    pa.alignment = a.alignment;
    pa.capacity = a.capacity;
    pa.flags = a.persistent ? UMLOS_ARENA_PERSISTENT : 0u;
    in.arenas.push_back(pa);
  }
  in.tensors.clear();
  in.tensors.reserve(set.tensors.size());
  for (const TensorSpec& t : set.tensors) {
    umlos_plan_tensor pt{};
    pt.size = t.size;
    pt.alignment = t.alignment;
    pt.begin = t.begin;
    pt.end = t.end;
    pt.arena = t.arena;
    pt.flags = t.flags;
    pt.alias_group = t.alias_group;
    in.tensors.push_back(pt);
  }
  in.option_storage.clear();
  in.option_storage.reserve(2 * options.size());  // no reallocation: attrs point into it
  in.options.clear();
  for (const std::string& kv : options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Failure(UMLOS_INVALID_ARGUMENT, "--option expects key=value, got '" + kv + "'");
    in.option_storage.push_back(kv.substr(0, eq));
    in.option_storage.push_back(kv.substr(eq + 1));
  }
  for (size_t i = 0; i < options.size(); ++i) {
    umlos_attr a{};
    a.key = in.option_storage[2 * i].c_str();
    a.kind = UMLOS_ATTR_STRING;
    a.s = in.option_storage[2 * i + 1].c_str();
    in.options.push_back(a);
  }
  in.request = umlos_plan_request{};
  in.request.struct_size = sizeof(umlos_plan_request);
  in.request.tensors = in.tensors.data();
  in.request.n_tensors = in.tensors.size();
  in.request.arenas = in.arenas.data();
  in.request.n_arenas = static_cast<uint32_t>(in.arenas.size());
  in.request.options = in.options.data();
  in.request.n_options = static_cast<uint32_t>(in.options.size());
}

}  // namespace umlos::plan
