// report.cpp — the run report: facts table and inline SVG charts.
#include "report.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "error.hpp"
#include "fsutil.hpp"
#include "tape.hpp"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Plot geometry (SVG user units).
constexpr double kWidth = 860, kHeight = 220, kLeft = 78, kRight = 16, kTop = 12, kBottom = 30;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr size_t kMaxPoints = 2000;  // a longer series is reduced to min/max per bucket

const char* const kActionColours[4] = {"#4c78a8", "#f58518", "#e45756", "#54a24b"};

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string coord(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

struct Point {
  int64_t t;
  double v;
};

struct Series {
  std::string name;
  std::vector<std::optional<double>> values;  // per iter record, in trace order
};

struct Run {
  json header = json::object();
  json end = json::object();
  std::vector<json> iters;
  std::vector<int64_t> t;
};

std::optional<double> number_of(const json& r, const std::string& key) {
  auto it = r.find(key);
  if (it == r.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text_of(const json& r, const std::string& key) {
  auto it = r.find(key);
  if (it == r.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

Run load_run(const std::string& run_dir) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) throw Failure(UMLOS_NOT_FOUND, "run folder '" + run_dir + "' does not exist");
  const std::string trace = (fs::path(run_dir) / "trace.jsonl").string();
  if (!fs::is_regular_file(trace, ec)) {
    throw Failure(UMLOS_NOT_FOUND, "run folder '" + run_dir + "' has no trace.jsonl (expected '" + trace + "')");
  }
  std::ifstream in(trace, std::ios::binary);
  if (!in) throw Failure(UMLOS_IO_ERROR, "cannot read trace '" + trace + "'");
  Run run;
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    json r;
    try {
      r = json::parse(line);
    } catch (const json::exception& e) {
      throw Failure(UMLOS_DATA_LOSS, trace + ":" + std::to_string(n) + ": not a JSON record (" + e.what() + ")");
    }
    if (!r.is_object()) {
      throw Failure(UMLOS_DATA_LOSS,
                    trace + ":" + std::to_string(n) + ": expected a JSON object, found " + std::string(r.type_name()));
    }
    const std::string kind = text_of(r, "record");
    if (kind == "run_header") {
      run.header = r;
    } else if (kind == "iter") {
      if (!r.contains("t") || !r["t"].is_number_integer()) {
        throw Failure(UMLOS_DATA_LOSS, trace + ":" + std::to_string(n) +
                                           ": iter record: field 't': expected an integer, found " +
                                           (r.contains("t") ? r["t"].dump() : std::string("none")));
      }
      run.t.push_back(r["t"].get<int64_t>());
      run.iters.push_back(std::move(r));
    } else if (kind == "run_end") {
      run.end = r;
    }
  }
  return run;
}

// Min and max of each bucket, in t order: keeps a spike visible.
std::vector<Point> reduce(const std::vector<Point>& pts) {
  if (pts.size() <= kMaxPoints) return pts;
  const size_t buckets = kMaxPoints / 2;
  std::vector<Point> out;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = pts.size() * b / buckets, hi = pts.size() * (b + 1) / buckets;
    if (lo >= hi) continue;
    size_t imin = lo, imax = lo;
    for (size_t i = lo; i < hi; ++i) {
      if (pts[i].v < pts[imin].v) imin = i;
      if (pts[i].v > pts[imax].v) imax = i;
    }
    out.push_back(pts[std::min(imin, imax)]);
    if (imin != imax) out.push_back(pts[std::max(imin, imax)]);
  }
  return out;
}

struct Frame {
  double t0, t1, y0, y1;
  double x(double t) const { return kLeft + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * kPlotW; }
  double y(double v) const { return kTop + kPlotH - (v - y0) / (y1 - y0) * kPlotH; }
};

Frame frame_for(const std::vector<int64_t>& ts, const std::vector<Point>& pts) {
  Frame f{0, 1, 0, 1};
  if (!ts.empty()) {
    f.t0 = static_cast<double>(*std::min_element(ts.begin(), ts.end()));
    f.t1 = static_cast<double>(*std::max_element(ts.begin(), ts.end()));
  }
  bool any = false;
  for (const Point& p : pts) {
    if (!std::isfinite(p.v)) continue;
    if (!any) f.y0 = f.y1 = p.v;
    f.y0 = std::min(f.y0, p.v);
    f.y1 = std::max(f.y1, p.v);
    any = true;
  }
  if (f.y1 == f.y0) {
    const double pad = f.y0 == 0 ? 1.0 : std::fabs(f.y0) * 0.05;
    f.y0 -= pad;
    f.y1 += pad;
  }
  return f;
}

std::string svg_open(const std::string& id, const std::string& label, double height = kHeight) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\" class=\"chart\" width=\"" + coord(kWidth) +
         "\" height=\"" + coord(height) + "\" viewBox=\"0 0 " + coord(kWidth) + " " + coord(height) +
         "\" role=\"img\" aria-label=\"" + esc(label) + "\">\n<title>" + esc(label) + "</title>\n";
}

std::string x_axis(const Frame& f, double y_base) {
  std::string s = "<line class=\"axis\" x1=\"" + coord(kLeft) + "\" y1=\"" + coord(y_base) + "\" x2=\"" +
                  coord(kLeft + kPlotW) + "\" y2=\"" + coord(y_base) + "\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double t = f.t0 + (f.t1 - f.t0) * i / 4.0;
    if (f.t1 - f.t0 >= 4) t = std::round(t);
    s += "<text class=\"tick\" x=\"" + coord(f.x(t)) + "\" y=\"" + coord(y_base + 16) + "\" text-anchor=\"middle\">" +
         num(t) + "</text>\n";
  }
  s += "<text class=\"tick\" x=\"" + coord(kLeft + kPlotW) + "\" y=\"" + coord(y_base + 28) +
       "\" text-anchor=\"end\">t</text>\n";
  return s;
}

std::string y_axis(const Frame& f) {
  std::string s = "<line class=\"axis\" x1=\"" + coord(kLeft) + "\" y1=\"" + coord(kTop) + "\" x2=\"" + coord(kLeft) +
                  "\" y2=\"" + coord(kTop + kPlotH) + "\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = f.y0 + (f.y1 - f.y0) * i / 4.0;
    s += "<line class=\"grid\" x1=\"" + coord(kLeft) + "\" y1=\"" + coord(f.y(v)) + "\" x2=\"" + coord(kLeft + kPlotW) +
         "\" y2=\"" + coord(f.y(v)) + "\"/>\n";
    s += "<text class=\"tick\" x=\"" + coord(kLeft - 6) + "\" y=\"" + coord(f.y(v) + 4) + "\" text-anchor=\"end\">" +
         num(v) + "</text>\n";
  }
  return s;
}

std::vector<Point> points_of(const Run& run, const std::string& key) {
  std::vector<Point> pts;
  for (size_t i = 0; i < run.iters.size(); ++i) {
    if (std::optional<double> v = number_of(run.iters[i], key)) pts.push_back({run.t[i], *v});
  }
  return pts;
}

// Summary line under a chart: count, first, last, min, max.
std::string stats(const std::vector<Point>& pts) {
  if (pts.empty()) return "";
  double lo = pts[0].v, hi = pts[0].v;
  for (const Point& p : pts) {
    lo = std::min(lo, p.v);
    hi = std::max(hi, p.v);
  }
  return "<p class=\"stats\">" + std::to_string(pts.size()) + " values; first " + num(pts.front().v) +
         " (t=" + std::to_string(pts.front().t) + "), last " + num(pts.back().v) +
         " (t=" + std::to_string(pts.back().t) + "), min " + num(lo) + ", max " + num(hi) + "</p>\n";
}

// A curve over t: one polyline per run of consecutive present values.
std::string line_chart(const Run& run, const std::string& key, const std::string& colour) {
  std::vector<Point> all = points_of(run, key);
  std::string s = "<h2>" + esc(key) + "</h2>\n";
  if (all.empty()) return s + "<p class=\"none\">no " + esc(key) + " values in the trace</p>\n";
  Frame f = frame_for(run.t, all);
  s += svg_open("chart-" + key, key + " over t");
  s += y_axis(f) + x_axis(f, kTop + kPlotH);
  // Iter records without the value (a metric computed every 50 steps) are
  // skipped; a non-finite value (JSON null for NaN) breaks the line.
  std::vector<std::vector<Point>> pieces(1);
  for (size_t i = 0; i < run.iters.size(); ++i) {
    auto it = run.iters[i].find(key);
    if (it == run.iters[i].end()) continue;
    std::optional<double> v = number_of(run.iters[i], key);
    if (v && std::isfinite(*v)) {
      pieces.back().push_back({run.t[i], *v});
    } else if (!pieces.back().empty()) {
      pieces.emplace_back();
    }
  }
  for (const std::vector<Point>& piece : pieces) {
    if (piece.empty()) continue;
    std::vector<Point> r = reduce(piece);
    if (r.size() == 1) {
      s += "<circle class=\"series\" cx=\"" + coord(f.x(r[0].t)) + "\" cy=\"" + coord(f.y(r[0].v)) +
           "\" r=\"2.5\" fill=\"" + colour + "\"/>\n";
      continue;
    }
    s += "<polyline class=\"series\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < r.size(); ++i) s += (i ? " " : "") + coord(f.x(r[i].t)) + "," + coord(f.y(r[i].v));
    s += "\"/>\n";
  }
  s += "</svg>\n";
  return s + stats(all);
}

// sil_mean: one point per iteration that has a value (probes).
std::string point_chart(const Run& run, const std::string& key, const std::string& colour) {
  // sil_mean persists between probes: keep the points where it changes or a probe ran.
  std::vector<Point> shown;
  for (size_t i = 0; i < run.iters.size(); ++i) {
    std::optional<double> v = number_of(run.iters[i], key);
    if (!v || !std::isfinite(*v)) continue;
    const bool probe = text_of(run.iters[i], "action") == "probe";
    if (probe || shown.empty() || shown.back().v != *v) shown.push_back({run.t[i], *v});
  }
  std::string s = "<h2>" + esc(key) + "</h2>\n";
  if (shown.empty()) return s + "<p class=\"none\">no finite " + esc(key) + " values in the trace</p>\n";
  Frame f = frame_for(run.t, shown);
  s += svg_open("chart-" + key, key + " at probes");
  s += y_axis(f) + x_axis(f, kTop + kPlotH);
  std::vector<Point> r = reduce(shown);
  for (const Point& p : r) {
    s += "<circle class=\"series\" cx=\"" + coord(f.x(p.t)) + "\" cy=\"" + coord(f.y(p.v)) + "\" r=\"3\" fill=\"" +
         colour + "\"><title>t=" + std::to_string(p.t) + " " + esc(key) + "=" + num(p.v) + "</title></circle>\n";
  }
  s += "</svg>\n";
  return s + stats(shown);
}

// Runs of equal labels over t, drawn as coloured bands.
struct Band {
  int64_t t0, t1;
  std::string label;
};

std::vector<Band> bands(const Run& run, const std::string& key) {
  std::vector<Band> out;
  for (size_t i = 0; i < run.iters.size(); ++i) {
    std::string v = text_of(run.iters[i], key);
    if (!out.empty() && out.back().label == v && out.back().t1 + 1 == run.t[i]) {
      out.back().t1 = run.t[i];
    } else {
      out.push_back({run.t[i], run.t[i], v});
    }
  }
  return out;
}

std::string timeline(const Run& run, const std::string& key, const std::vector<std::string>& labels,
                     const std::vector<std::string>& colours, const std::string& title) {
  std::string s = "<h2>" + esc(title) + "</h2>\n";
  std::vector<Band> bs = bands(run, key);
  if (bs.empty()) return s + "<p class=\"none\">no iterations in the trace</p>\n";
  const double h = 70;
  Frame f = frame_for(run.t, {});
  // One t step: a band [t0, t1] covers t0 - 0.5 .. t1 + 0.5.
  const double step = run.t.size() > 1 ? kPlotW / static_cast<double>(f.t1 - f.t0 + 1) : kPlotW;
  auto left = [&](int64_t t) { return kLeft + (static_cast<double>(t) - f.t0) * step; };
  s += svg_open("timeline-" + key, title, h + 34);
  std::map<std::string, uint64_t> counts;
  for (const Band& b : bs) {
    size_t idx = std::find(labels.begin(), labels.end(), b.label) - labels.begin();
    const std::string colour = idx < colours.size() ? colours[idx] : "#999999";
    const double x = left(b.t0), w = std::max(0.6, left(b.t1 + 1) - x);
    // The class comes from the report's own list; a trace's label (any
    // text a run folder holds) is only ever shown, escaped, as text.
    const std::string cls = idx < labels.size() ? labels[idx] : "other";
    s += "<rect class=\"mark " + cls + "\" x=\"" + coord(x) + "\" y=\"" + coord(kTop) + "\" width=\"" + coord(w) +
         "\" height=\"" + coord(h - kTop - 14) + "\" fill=\"" + colour + "\"><title>t=" + std::to_string(b.t0) +
         (b.t1 != b.t0 ? ".." + std::to_string(b.t1) : std::string()) + " " + esc(b.label) + "</title></rect>\n";
    counts[b.label] += static_cast<uint64_t>(b.t1 - b.t0 + 1);
  }
  s += "<line class=\"axis\" x1=\"" + coord(kLeft) + "\" y1=\"" + coord(h - 14) + "\" x2=\"" + coord(kLeft + kPlotW) +
       "\" y2=\"" + coord(h - 14) + "\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double t = f.t0 + (f.t1 - f.t0) * i / 4.0;
    if (f.t1 - f.t0 >= 4) t = std::round(t);
    s += "<text class=\"tick\" x=\"" + coord(left(static_cast<int64_t>(t)) + step / 2) + "\" y=\"" + coord(h + 2) +
         "\" text-anchor=\"middle\">" + num(t) + "</text>\n";
  }
  // Legend.
  double lx = kLeft;
  for (size_t i = 0; i < labels.size(); ++i) {
    s += "<rect class=\"legend\" x=\"" + coord(lx) + "\" y=\"" + coord(h + 12) +
         "\" width=\"10\" height=\"10\" fill=\"" + colours[i] + "\"/><text class=\"tick\" x=\"" + coord(lx + 14) +
         "\" y=\"" + coord(h + 21) + "\">" + esc(labels[i]) + " (" + std::to_string(counts[labels[i]]) + ")</text>\n";
    lx += 150;
  }
  s += "</svg>\n";
  return s;
}

std::string fact_row(const std::string& k, const std::string& v, bool code = false) {
  if (v.empty()) return "";
  return "<tr><th>" + esc(k) + "</th><td>" + (code ? "<code>" + esc(v) + "</code>" : esc(v)) + "</td></tr>\n";
}

// A file of the run folder that the report may read: a regular file, not a
// symlink (a received run folder could point one at a file of the reader's,
// which would then be copied into a page the reader may pass on), and not
// larger than `limit` bytes.
bool run_file(const std::string& file, uintmax_t limit) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (ec || !fs::is_regular_file(st)) return false;
  const uintmax_t size = fs::file_size(file, ec);
  return !ec && size <= limit;
}

constexpr uintmax_t kMaxRunJsonBytes = 64u << 20;

// RUN_DIR/value_arenas.json (kernel/runtime/value_arenas.hpp): where the run
// state lived at the end, one row per arena.
std::string value_arenas_table(const std::string& run_dir) {
  const std::string file = (fs::path(run_dir) / "value_arenas.json").string();
  if (!run_file(file, kMaxRunJsonBytes)) return "";
  json doc;
  try {
    doc = json::parse(read_text_file(file));
  } catch (const json::exception&) {
    return "<p class=\"none\">value_arenas.json is not JSON; not shown</p>\n";
  }
  if (!doc.is_object()) return "<p class=\"none\">value_arenas.json is not a JSON object; not shown</p>\n";
  std::string s = "<p>Run state: every named value in a slot of the arenas " + esc(text_of(doc, "strategy")) +
                  " planned (" + esc(text_of(doc, "replans")) + " plans; plan hash <code>" +
                  esc(text_of(doc, "plan_hash").substr(0, 16)) + "&hellip;</code>).</p>\n";
  s += "<table><tr><th>arena</th><th>values</th><th>bytes</th><th>lower bound</th></tr>\n";
  if (doc.contains("arenas") && doc["arenas"].is_object()) {
    for (const auto& [name, a] : doc["arenas"].items()) {
      if (!a.is_object()) continue;
      s += "<tr><td>" + esc(name) + "</td><td>" + esc(text_of(a, "values")) + "</td><td>" +
           esc(text_of(a, "footprint_bytes")) + "</td><td>" + esc(text_of(a, "lower_bound_bytes")) + "</td></tr>\n";
    }
  }
  return s + "</table>\n";
}

constexpr uintmax_t kMaxPlanSvgBytes = 16u << 20;

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    o += k[v >> 18];
    o += k[(v >> 12) & 63];
    o += k[(v >> 6) & 63];
    o += k[v & 63];
  }
  if (i < in.size()) {
    const bool two = i + 1 < in.size();
    const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (two ? uint32_t(uint8_t(in[i + 1])) << 8 : 0u);
    o += k[v >> 18];
    o += k[(v >> 12) & 63];
    o += two ? k[(v >> 6) & 63] : '=';
    o += '=';
  }
  return o;
}

// RUN_DIR/memory_plan.svg is shown as an image, never as markup: the file
// comes from a run folder, which may have been received from someone else,
// and an SVG document parsed into the page could carry script (<script>,
// onload=, javascript: links, foreignObject HTML). An SVG loaded by <img>
// runs no script and fetches nothing, whatever it holds; base64 keeps its
// bytes out of the page's own markup.
std::string memory_plan(const std::string& run_dir) {
  const std::string file = (fs::path(run_dir) / "memory_plan.svg").string();
  const std::string values = value_arenas_table(run_dir);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return values.empty() ? "" : "<h2>memory plan</h2>\n" + values;
  std::string s = "<h2>memory plan</h2>\n" + values;
  if (!run_file(file, kMaxPlanSvgBytes)) {
    return s + "<p class=\"none\">memory_plan.svg is not a regular file of at most " +
           std::to_string(kMaxPlanSvgBytes) + " bytes; not shown</p>\n";
  }
  const std::string svg = read_text_file(file);
  if (svg.find("<svg") == std::string::npos) {
    return s + "<p class=\"none\">memory_plan.svg holds no &lt;svg&gt; element; not shown</p>\n";
  }
  return s + "<div class=\"plan\"><img alt=\"memory plan (RUN_DIR/memory_plan.svg)\" src=\"data:image/svg+xml;base64," +
         base64(svg) + "\"/></div>\n";
}

// Spec 004 IV equations in their canonical text ("y[3] = sin(z0) * z1 +
// 0.5") set as math: subscripted indices, a centred dot for products.
std::string math_of(const std::string& eq) {
  std::string o;
  for (size_t i = 0; i < eq.size(); ++i) {
    const char ch = eq[i];
    if (eq.compare(i, 4, " + -") == 0) {  // a negative constant term reads as a subtraction
      o += " &minus; ";
      i += 3;
      continue;
    }
    if ((ch == 'z' || ch == 'y') && (i == 0 || !std::isalnum(static_cast<unsigned char>(eq[i - 1])))) {
      size_t j = i + 1;
      const bool bracket = j < eq.size() && eq[j] == '[';
      if (bracket) ++j;
      size_t k = j;
      while (k < eq.size() && std::isdigit(static_cast<unsigned char>(eq[k]))) ++k;
      if (k > j && (!bracket || (k < eq.size() && eq[k] == ']'))) {
        o += std::string("<i>") + ch + "</i><sub>" + eq.substr(j, k - j) + "</sub>";
        i = bracket ? k : k - 1;
        continue;
      }
    }
    if (ch == '*' && i > 0 && i + 1 < eq.size() && eq[i - 1] == ' ' && eq[i + 1] == ' ') {
      o += "&middot;";
      continue;
    }
    o += esc(std::string(1, ch));
  }
  return o;
}

// The equations each augment step found (its iter record's "equations",
// written by the augment operator through trace.equations).
std::string equations(const Run& run) {
  std::string s;
  auto list = [&](const json& eqs) {
    std::string l = "<ol class=\"eq\">\n";
    for (const json& e : eqs) {
      if (!e.is_string()) continue;
      l += "<li><span class=\"math\">" + math_of(e.get<std::string>()) + "</span> <code>" + esc(e.get<std::string>()) +
           "</code></li>\n";
    }
    return l + "</ol>\n";
  };
  for (const json& r : run.iters) {
    auto it = r.find("equations");
    if (it == r.end() || !it->is_array()) continue;
    s += "<p>augment at t = " + esc(text_of(r, "t")) + ": " + std::to_string(it->size()) +
         " prototype equations (sym_pred = &Sigma;<sub>i</sub> w<sub>i</sub>(z) &middot; eq<sub>i</sub>(z))</p>\n" +
         list(*it);
  }
  return s.empty() ? "" : "<h2>symbolic prototypes</h2>\n" + s;
}

const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:960px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:26px}"
    "table.facts{border-collapse:collapse;font-size:13px}"
    "table.facts th{text-align:left;padding:3px 12px 3px 0;vertical-align:top;color:#555;font-weight:normal}"
    "table.facts td{padding:3px 0}code{font-size:12px}"
    "svg.chart{display:block;background:#fcfcfc;border:1px solid #ddd}"
    ".axis{stroke:#444;stroke-width:1}.grid{stroke:#e4e4e4;stroke-width:1}"
    ".tick{font-size:11px;fill:#444}.stats,.none{font-size:12px;color:#555}"
    ".failed{color:#b00020}.plan img{max-width:100%;height:auto}"
    "ol.eq{font-size:14px}ol.eq .math{font-family:serif;font-size:16px}"
    "ol.eq code{display:block;color:#777;font-size:11px;margin:2px 0 6px}";

}  // namespace

std::string render_report(const std::string& run_dir) {
  Run run = load_run(run_dir);
  const json& h = run.header;
  const json& e = run.end;
  const std::string name = text_of(h, "name").empty() ? fs::path(run_dir).filename().string() : text_of(h, "name");

  std::string o;
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  o += "<title>UML_OS run report: " + esc(name) + "</title>\n<style>" + std::string(kStyle) +
       "</style>\n</head>\n<body>\n";
  o += "<h1>UML_OS run <code>" + esc(name) + "</code></h1>\n";

  // ---- facts
  std::string status = text_of(e, "status");
  if (status.empty()) status = "incomplete (no run_end record)";
  o += "<table class=\"facts\">\n";
  o += fact_row("status", status);
  o += fact_row("iterations",
                std::to_string(run.iters.size()) + (run.t.empty() ? std::string()
                                                                  : " (t " + std::to_string(run.t.front()) + ".." +
                                                                        std::to_string(run.t.back()) + ")"));
  o += fact_row("spec_version", text_of(h, "spec_version"));
  o += fact_row("task_type", text_of(h, "task_type"));
  o += fact_row("seed", text_of(h, "seed"));
  o += fact_row("replay_token", text_of(h, "replay_token"), true);
  o += fact_row("job_id", text_of(h, "job_id"), true);
  o += fact_row("manifest_hash", text_of(h, "manifest_hash"), true);
  o += fact_row("policy_hash", text_of(h, "policy_hash"), true);
  o += fact_row("env_manifest_hash", text_of(h, "env_manifest_hash"), true);
  o += fact_row("driver", text_of(h, "driver"));
  o += fact_row("device", text_of(h, "device"));
  o += fact_row("backend_hash", text_of(h, "backend_hash"), true);
  o += fact_row("abi", text_of(h, "abi"));
  if (h.contains("modules") && h["modules"].is_array()) {
    std::string mods;
    for (const json& m : h["modules"]) {
      mods += "<div><code>" + esc(text_of(m, "name")) + "</code> " + esc(text_of(m, "version")) + " sha256 <code>" +
              esc(text_of(m, "sha256")) + "</code></div>";
    }
    if (!mods.empty()) o += "<tr><th>modules</th><td>" + mods + "</td></tr>\n";
  }
  if (h.contains("operators") && h["operators"].is_object()) {
    std::string ops;
    for (auto it = h["operators"].begin(); it != h["operators"].end(); ++it) {
      ops += "<div>" + esc(it.key()) + ": <code>" + esc(it->is_string() ? it->get<std::string>() : it->dump()) +
             "</code></div>";
    }
    if (!ops.empty()) o += "<tr><th>operators</th><td>" + ops + "</td></tr>\n";
  }
  o += fact_row("final state_fp", text_of(e, "state_fp"), true);
  o += fact_row("functional_fp", text_of(e, "functional_fp"), true);
  o += fact_row("rng_fingerprint", text_of(e, "rng_fingerprint"), true);
  o += fact_row("tape_digest", text_of(e, "tape_digest"), true);
  for (const char* metric : {"val_accuracy", "val_r2"}) {
    if (std::optional<double> v = number_of(e, metric)) o += fact_row(metric + std::string(" (run_end)"), num(*v));
  }
  if (status == "failed") {
    o += "<tr><th>failure</th><td class=\"failed\">" + esc(text_of(e, "failure_code")) + " in " +
         esc(text_of(e, "failure_operator")) + "</td></tr>\n";
    const std::string ff = (fs::path(run_dir) / "failure.json").string();
    if (run_file(ff, kMaxRunJsonBytes)) {
      try {
        json f = json::parse(read_text_file(ff));
        o += fact_row("failure message", text_of(f, "message"));
      } catch (const json::exception&) {
        o += fact_row("failure message", "(failure.json is not JSON)");
      }
    }
  }
  o += "</table>\n";

  // ---- charts
  o += line_chart(run, "loss_total", "#4c78a8");
  for (const char* metric : {"val_accuracy", "val_r2"}) {
    if (!points_of(run, metric).empty()) o += line_chart(run, metric, "#54a24b");
  }
  o += line_chart(run, "grad_norm", "#b279a2");
  o += timeline(run, "action", {"optimize", "probe", "switch", "augment"},
                {kActionColours[0], kActionColours[1], kActionColours[2], kActionColours[3]}, "actions");
  o += timeline(run, "state", {"S_P", "S_PROTO"}, {"#9ecae9", "#e45756"}, "state");
  o += point_chart(run, "sil_mean", "#f58518");
  o += equations(run);
  o += memory_plan(run_dir);
  o += "<p class=\"stats\">generated by umlos report from " + esc((fs::path(run_dir) / "trace.jsonl").string()) +
       "</p>\n</body>\n</html>\n";
  return o;
}

void write_report(const std::string& run_dir, const std::string& out_file) {
  write_file_atomic(out_file, render_report(run_dir));
}

}  // namespace umlos

// ---- `umlos report`
namespace umlos {

int cmd_report(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  const char* usage = "umlos report RUN_DIR -o report.html";
  po::options_description desc("umlos report options");
  std::string run_dir, out;
  desc.add_options()("run-dir", po::value<std::string>(&run_dir)->required(), "the run folder (trace.jsonl)")(
      "output,o", po::value<std::string>(&out)->required(), "the HTML file to write")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: " << usage << "\n\n" << desc << "\n";
    return 0;
  }
  po::notify(vm);
  write_report(run_dir, out);
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return 0;
}

}  // namespace umlos
