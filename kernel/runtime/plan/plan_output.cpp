// plan_output.cpp — plan hash, checkpoint CBOR, JSON, text and SVG renderings.
#include "plan_output.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cbor.hpp"
#include "error.hpp"

namespace umlos::plan {
namespace {

using cbor::Value;

Value json_to_cbor(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::null();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::json::value_t::number_unsigned:
      return Value::uinteger(j.get<uint64_t>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value::text(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      for (const auto& e : j) items.push_back(json_to_cbor(e));
      return Value::array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      std::vector<std::pair<Value, Value>> entries;
      for (auto it = j.begin(); it != j.end(); ++it)
        entries.emplace_back(Value::text(it.key()), json_to_cbor(it.value()));
      return Value::map(std::move(entries));
    }
    default:
      return Value::null();
  }
}

Value bytes_of(const Digest& d) { return Value::bytes(d.data(), d.size()); }
Digest hash_of(const Value& v) { return sha256(cbor::encode(v)); }

std::string fmt_ratio(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", r);
  return b;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

}  // namespace

uint64_t PlanReport::footprint_bytes() const {
  uint64_t t = 0;
  for (uint64_t f : arena_footprint) t += f;
  return t;
}
uint64_t PlanReport::lower_bound_bytes() const {
  uint64_t t = 0;
  for (const ArenaMetrics& m : metrics) t += m.lower_bound;
  return t;
}

// The per-tensor tables are streamed into the hash (cbor::StreamEncoder):
// at 10^6 tensors a Value tree of them held ~15 million Values and took
// longer than planning. The bytes hashed are the same.
Digest plan_hash(const IntervalSet& set, const PlanReport& plan) {
  Sha256 ir_hasher, plan_hasher;
  auto to_hasher = [](void* h, const uint8_t* data, size_t size) { static_cast<Sha256*>(h)->update(data, size); };
  const size_t n = set.tensors.size();
  Digest ir_hash;
  {
    cbor::StreamEncoder e(to_hasher, &ir_hasher);
    e.array(2);
    e.text("umlos.intervals.v1");
    e.array(n);
    for (const TensorSpec& t : set.tensors) {
      e.array(8);
      e.text(t.id);
      e.text(set.arenas[t.arena].name);
      e.uinteger(t.size);
      e.uinteger(t.alignment);
      e.integer(t.begin);
      e.integer(t.end);
      e.uinteger(t.flags);
      e.uinteger(t.alias_group);
    }
    e.flush();
    ir_hash = ir_hasher.finish();
  }
  std::vector<int64_t> steps;
  steps.reserve(2 * n);
  for (const TensorSpec& t : set.tensors) {
    steps.push_back(t.begin);
    steps.push_back(t.end);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  Digest execution_order_hash;
  {
    Sha256 h;
    cbor::StreamEncoder e(to_hasher, &h);
    e.array(steps.size());
    for (int64_t s : steps) e.integer(s);
    e.flush();
    execution_order_hash = h.finish();
  }
  std::vector<Value> arenas;
  for (const ArenaSpec& a : set.arenas)
    arenas.push_back(Value::array({Value::text(a.name), Value::uinteger(a.alignment), Value::uinteger(a.capacity),
                                   Value::boolean(a.persistent)}));
  const Digest arena_config_hash = hash_of(Value::array(arenas));
  const Digest shard_spec_hash = hash_of(json_to_cbor(nlohmann::json::parse(set.shard_spec_json)));
  cbor::StreamEncoder e(to_hasher, &plan_hasher);
  e.array(2);
  e.text("tmmu_plan_v1");
  e.array(9);
  e.bytes(ir_hash.data(), ir_hash.size());
  e.text(set.mode);
  e.bytes(arena_config_hash.data(), arena_config_hash.size());
  e.bytes(execution_order_hash.data(), execution_order_hash.size());
  e.uinteger(set.rank);
  e.uinteger(set.world_size);
  e.bytes(shard_spec_hash.data(), shard_spec_hash.size());
  e.array(n);  // slot_assignment_table
  for (size_t i = 0; i < n; ++i) {
    const TensorSpec& t = set.tensors[i];
    e.array(3);
    e.text(t.id);
    e.text(set.arenas[t.arena].name);
    if (plan.slots[i] == UMLOS_PLAN_NO_SLOT)
      e.null();
    else
      e.uinteger(plan.slots[i]);
  }
  e.array(n);  // logical_address_table
  for (size_t i = 0; i < n; ++i) {
    const TensorSpec& t = set.tensors[i];
    e.array(3);
    e.text(t.id);
    e.text(set.arenas[t.arena].name);
    e.uinteger(plan.offsets[i]);
  }
  e.flush();
  return plan_hasher.finish();
}

std::vector<uint8_t> checkpoint_cbor(const IntervalSet& set, const PlanReport& plan) {
  std::vector<Value> assignment, ranges, metrics;
  for (size_t i = 0; i < set.tensors.size(); ++i) {
    const TensorSpec& t = set.tensors[i];
    assignment.push_back(
        Value::array({Value::text(t.id), Value::text(set.arenas[t.arena].name),
                      plan.slots[i] == UMLOS_PLAN_NO_SLOT ? Value::null() : Value::uinteger(plan.slots[i]),
                      Value::uinteger(plan.offsets[i]), Value::uinteger(t.size)}));
    ranges.push_back(Value::array({Value::text(t.id), Value::integer(t.begin), Value::integer(t.end)}));
  }
  for (size_t a = 0; a < set.arenas.size(); ++a) {
    const ArenaMetrics& m = plan.metrics[a];
    metrics.push_back(Value::map({{Value::text("arena"), Value::text(set.arenas[a].name)},
                                  {Value::text("peak_logical_slots"), Value::uinteger(m.peak_logical_slots)},
                                  {Value::text("peak_physical_bytes"), Value::uinteger(m.peak_physical_bytes)},
                                  {Value::text("lower_bound_bytes"), Value::uinteger(m.lower_bound)},
                                  {Value::text("max_live"), Value::uinteger(m.max_live)}}));
  }
  return cbor::encode(Value::map({{Value::text("format"), Value::text("umlos.tmmu_checkpoint.v1")},
                                  {Value::text("strategy"), Value::text(plan.strategy)},
                                  {Value::text("plan_hash"), bytes_of(plan_hash(set, plan))},
                                  {Value::text("logical_slot_assignment"), Value::array(assignment)},
                                  {Value::text("live_ranges"), Value::array(ranges)},
                                  {Value::text("metrics"), Value::array(metrics)}}));
}

std::string to_json(const IntervalSet& set, const PlanReport& plan, const Digest& hash) {
  using nlohmann::json;
  json j;
  j["strategy"] = plan.strategy;
  j["name"] = set.name;
  j["footprint_bytes"] = plan.footprint_bytes();
  j["lower_bound_bytes"] = plan.lower_bound_bytes();
  j["plan_hash"] = to_hex(hash);
  json metrics;
  json peak_bytes = json::object(), slots = json::object(), max_live = json::object(), reuse = json::object(),
       frag = json::object(), lbs = json::object();
  uint64_t total_slots = 0, total_live = 0;
  for (size_t a = 0; a < set.arenas.size(); ++a) {
    const ArenaMetrics& m = plan.metrics[a];
    const std::string& n = set.arenas[a].name;
    peak_bytes[n] = m.peak_physical_bytes;
    slots[n] = m.peak_logical_slots;
    max_live[n] = m.max_live;
    reuse[n] = m.memory_reuse_ratio;
    frag[n] = m.internal_fragmentation_ratio;
    lbs[n] = m.lower_bound;
    total_slots += m.peak_logical_slots;
    total_live += m.max_live;
  }
  metrics["peak_logical_slots"] = total_slots;
  metrics["peak_logical_slots_per_arena"] = slots;
  metrics["peak_physical_bytes_per_arena"] = peak_bytes;
  metrics["lower_bound_bytes_per_arena"] = lbs;
  metrics["memory_reuse_ratio"] = reuse;
  metrics["max_live"] = total_live;
  metrics["max_live_per_arena"] = max_live;
  metrics["internal_fragmentation_ratio"] = frag;
  metrics["allocation_time_ns"] = plan.allocation_time_ns;
  metrics["work_units"] = plan.work_units;
  j["metrics"] = metrics;
  json tensors = json::array();
  for (size_t i = 0; i < set.tensors.size(); ++i) {
    const TensorSpec& t = set.tensors[i];
    json e;
    e["id"] = t.id;
    e["arena"] = set.arenas[t.arena].name;
    e["offset"] = plan.offsets[i];
    e["size"] = t.size;
    e["begin"] = t.begin;
    e["end"] = t.end;
    if (plan.slots[i] == UMLOS_PLAN_NO_SLOT)
      e["slot"] = nullptr;
    else
      e["slot"] = plan.slots[i];
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  return j.dump() + "\n";
}

std::string to_text(const IntervalSet& set, const PlanReport& plan, const Digest& hash) {
  std::ostringstream o;
  o << "plan of " << set.source << " (" << set.tensors.size() << " tensors) by " << plan.strategy << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %9s %8s %8s %16s %16s %8s %8s\n", "arena", "tensors", "max_live", "slots",
                "footprint", "lower_bound", "ratio", "reuse");
  o << line;
  std::vector<uint64_t> count(set.arenas.size(), 0);
  for (const TensorSpec& t : set.tensors) ++count[t.arena];
  for (size_t a = 0; a < set.arenas.size(); ++a) {
    const ArenaMetrics& m = plan.metrics[a];
    const double ratio = m.lower_bound ? static_cast<double>(m.peak_physical_bytes) / m.lower_bound : 1.0;
    std::snprintf(line, sizeof line, "%-14s %9llu %8llu %8llu %16llu %16llu %8s %8s\n", set.arenas[a].name.c_str(),
                  (unsigned long long)count[a], (unsigned long long)m.max_live,
                  (unsigned long long)m.peak_logical_slots, (unsigned long long)m.peak_physical_bytes,
                  (unsigned long long)m.lower_bound, fmt_ratio(ratio).c_str(), fmt_ratio(m.memory_reuse_ratio).c_str());
    o << line;
  }
  const uint64_t f = plan.footprint_bytes(), lb = plan.lower_bound_bytes();
  o << "footprint_bytes " << f << ", lower_bound_bytes " << lb << ", ratio "
    << fmt_ratio(lb ? static_cast<double>(f) / lb : 1.0) << "\n";
  o << "allocation_time_ns " << plan.allocation_time_ns << ", work_units " << plan.work_units << "\n";
  o << "plan_hash " << to_hex(hash) << "\n";
  o << "check: no overlap, alignment, footprint, capacity"
    << (plan.slots.empty() || plan.slots[0] == UMLOS_PLAN_NO_SLOT ? "" : ", slots == max live") << ": ok\n";
  return o.str();
}

std::string to_svg(const IntervalSet& set, const PlanReport& plan) {
  const double W = 960, panel_h = 320, left = 90, top_margin = 40, gap = 60, right = 20;
  std::ostringstream o;
  const size_t n_arenas = set.arenas.size();
  std::vector<std::vector<size_t>> members(n_arenas);
  for (size_t i = 0; i < set.tensors.size(); ++i) members[set.tensors[i].arena].push_back(i);
  std::vector<size_t> shown;
  for (size_t a = 0; a < n_arenas; ++a)
    if (!members[a].empty()) shown.push_back(a);
  const double H = top_margin + shown.size() * (panel_h + gap);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">" << xml_escape(set.name.empty() ? set.source : set.name)
    << " — " << xml_escape(plan.strategy) << ": " << plan.footprint_bytes() << " B, lower bound "
    << plan.lower_bound_bytes() << " B</text>\n";
  double y0 = top_margin;
  for (size_t a : shown) {
    const ArenaMetrics& m = plan.metrics[a];
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i : members[a]) {
      t0 = std::min(t0, set.tensors[i].begin);
      t1 = std::max(t1, set.tensors[i].end + 1);
    }
    if (set.arenas[a].persistent) t1 = std::max(t1, t0 + 1);
    const double ymax = static_cast<double>(std::max<uint64_t>({m.peak_physical_bytes, m.lower_bound, 1}));
    const double pw = W - left - right;
    auto X = [&](int64_t t) { return left + pw * static_cast<double>(t - t0) / static_cast<double>(t1 - t0); };
    auto Y = [&](double off) { return y0 + panel_h - panel_h * off / ymax; };
    o << "<g>\n<rect x=\"" << left << "\" y=\"" << y0 << "\" width=\"" << pw << "\" height=\"" << panel_h
      << "\" fill=\"#f7f7f7\" stroke=\"#888\"/>\n";
    for (size_t i : members[a]) {
      const TensorSpec& t = set.tensors[i];
      const int64_t b = set.arenas[a].persistent ? t0 : t.begin;
      const int64_t e = set.arenas[a].persistent ? t1 : t.end + 1;
      const double x = X(b), w = std::max(0.5, X(e) - X(b));
      const double yt = Y(static_cast<double>(plan.offsets[i] + t.size)), yb = Y(static_cast<double>(plan.offsets[i]));
      const unsigned hue = static_cast<unsigned>((i * 2654435761u) % 360u);
      char rect[320];
      std::snprintf(rect, sizeof rect,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"hsl(%u,60%%,62%%)\" "
                    "stroke=\"#333\" stroke-width=\"0.3\">",
                    x, yt, w, std::max(0.3, yb - yt), hue);
      o << rect << "<title>" << xml_escape(t.id) << ": offset " << plan.offsets[i] << ", size " << t.size << ", steps "
        << t.begin << ".." << t.end << "</title></rect>\n";
    }
    const double ylb = Y(static_cast<double>(m.lower_bound));
    o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << ylb << "\" y2=\"" << ylb
      << "\" stroke=\"#d00\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n";
    o << "<text x=\"" << left + pw - 4 << "\" y=\"" << ylb - 4 << "\" text-anchor=\"end\" fill=\"#d00\">lower bound "
      << m.lower_bound << " B</text>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << y0 + 12 << "\" text-anchor=\"end\">" << m.peak_physical_bytes
      << "</text>\n<text x=\"" << left - 6 << "\" y=\"" << y0 + panel_h << "\" text-anchor=\"end\">0</text>\n";
    o << "<text x=\"" << left << "\" y=\"" << y0 + panel_h + 16 << "\">step " << t0 << "</text>\n";
    o << "<text x=\"" << left + pw << "\" y=\"" << y0 + panel_h + 16 << "\" text-anchor=\"end\">step " << t1
      << "</text>\n";
    o << "<text x=\"" << left + pw / 2 << "\" y=\"" << y0 + panel_h + 32 << "\" text-anchor=\"middle\">arena "
      << xml_escape(set.arenas[a].name) << ": " << members[a].size() << " tensors, footprint " << m.peak_physical_bytes
      << " B (x = step, y = offset)</text>\n</g>\n";
    y0 += panel_h + gap;
  }
  o << "</svg>\n";
  return o.str();
}

void from_request(const umlos_plan_request& request, const umlos_plan_result& result, const std::string& strategy,
                  const std::string& name, IntervalSet& set, PlanReport& plan) {
  set = IntervalSet{};
  set.name = name;
  set.source = name;
  for (uint32_t a = 0; a < request.n_arenas; ++a) {
    const umlos_plan_arena& ra = request.arenas[a];
    ArenaSpec spec;
    spec.name = ra.name ? ra.name : "arena" + std::to_string(a);
    spec.alignment = ra.alignment;
    spec.capacity = ra.capacity;
    spec.persistent = (ra.flags & UMLOS_ARENA_PERSISTENT) != 0;
    set.arenas.push_back(spec);
  }
  // Zero-padded indices keep the id order equal to the request order.
  const size_t width = std::to_string(request.n_tensors).size();
  for (uint64_t i = 0; i < request.n_tensors; ++i) {
    const umlos_plan_tensor& rt = request.tensors[i];
    TensorSpec t;
    std::string digits = std::to_string(i);
    t.id = "t" + std::string(width - digits.size(), '0') + digits;
    t.arena = rt.arena;
    t.size = t.actual_size = rt.size;
    t.alignment = rt.alignment;
    t.begin = rt.begin;
    t.end = rt.end;
    t.flags = rt.flags;
    t.alias_group = rt.alias_group;
    set.tensors.push_back(t);
  }
  plan = PlanReport{};
  plan.strategy = strategy;
  plan.offsets.assign(result.offsets, result.offsets + request.n_tensors);
  if (result.slots)
    plan.slots.assign(result.slots, result.slots + request.n_tensors);
  else
    plan.slots.assign(request.n_tensors, UMLOS_PLAN_NO_SLOT);
  plan.arena_footprint.assign(result.arena_footprint, result.arena_footprint + request.n_arenas);
  plan.work_units = result.work_units;
  plan.metrics = compute_metrics(request, result);
}

}  // namespace umlos::plan
