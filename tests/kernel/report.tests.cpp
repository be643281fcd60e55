// `umlos report`: one self-contained HTML page from a run folder.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "error.hpp"
#include "procedure.hpp"
#include "report.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Checks that the page is well-formed XML-ish markup: every tag closed in
// order (void HTML tags written self-closed), no stray '<'. Returns "" or the
// first problem.
std::string markup_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i);
      if (e == std::string::npos) return "unterminated comment";
      i = e + 3;
      continue;
    }
    if (s.compare(i, 9, "<!DOCTYPE") == 0) {
      i = s.find('>', i);
      continue;
    }
    size_t e = s.find('>', i);
    if (e == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, e - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(i);
    i = e + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) + ">";
      }
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

// Standard base64 (RFC 4648), written independently of the report's.
std::string base64_of(const std::string& in) {
  static const std::string k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  int bits = 0;
  uint32_t acc = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      o += k[(acc >> bits) & 63];
    }
  }
  if (bits > 0) o += k[(acc << (6 - bits)) & 63];
  while (o.size() % 4) o += '=';
  return o;
}

// Every piece of markup in `html` must be the report's own: tags from the
// report's vocabulary, no event-handler attribute, no javascript: or
// external URL, the only src a base64 SVG image. Escaped text holds no '<',
// so every '<' starts a tag. Returns "" or the first problem.
std::string injection_problem(const std::string& html) {
  static const std::set<std::string> tags = {
      "html", "head", "meta", "title", "style",    "body",   "h1",   "h2", "table", "tr",   "th", "td",  "code", "div",
      "p",    "svg",  "line", "text",  "polyline", "circle", "rect", "ol", "li",    "span", "i",  "sub", "img"};
  const std::regex attr_re("\\s+([^\\s=/>]+)(=\"([^\"]*)\")?");
  size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 9, "<!DOCTYPE") == 0) {
      i += 9;
      continue;
    }
    const size_t e = html.find('>', i);
    if (e == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = html.substr(i + 1, e - i - 1);
    i = e + 1;
    if (!tag.empty() && tag[0] == '/') tag.erase(0, 1);
    if (!tag.empty() && tag.back() == '/') tag.pop_back();
    const size_t name_end = tag.find_first_of(" \n\t");
    const std::string name = tag.substr(0, name_end);
    if (!tags.count(name)) return "tag <" + tag.substr(0, 80) + ">";
    if (name_end == std::string::npos) continue;
    const std::string rest = tag.substr(name_end);
    size_t matched = 0;
    for (std::sregex_iterator it(rest.begin(), rest.end(), attr_re), end; it != end; ++it) {
      if (static_cast<size_t>(it->position(0)) != matched)
        return "unparsed attribute text in <" + tag.substr(0, 80) + ">";
      matched += static_cast<size_t>(it->length(0));
      std::string a = (*it)[1].str(), v = (*it)[3].str();
      std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string lv = v;
      std::transform(lv.begin(), lv.end(), lv.begin(), [](unsigned char c) { return std::tolower(c); });
      if (a.rfind("on", 0) == 0) return "event handler " + a + " in <" + name + ">";
      if (a == "href" || a == "xlink:href" || a == "action" || a == "formaction")
        return "link " + a + " in <" + name + ">";
      if (lv.find("javascript:") != std::string::npos) return "javascript: in " + a + " of <" + name + ">";
      if (a == "src" && (name != "img" || v.rfind("data:image/svg+xml;base64,", 0) != 0))
        return "src " + v.substr(0, 60);
      if (a == "style") return "inline style in <" + name + ">";
    }
    if (matched != rest.size()) return "unparsed attribute text in <" + tag.substr(0, 80) + ">";
  }
  return "";
}

const char* kPlan =
    "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"40\">"
    "<rect id=\"plan-marker\" x=\"1\" y=\"1\" width=\"10\" height=\"10\"/></svg>\n";

// A small run written by hand: 12 iterations, two probes, a switch to
// S_PROTO, an augment, a held-out metric, one NaN-free sil_mean series.
std::string hand_run() {
  std::string dir = temp_dir("report-hand");
  std::string t;
  t +=
      R"J({"record":"run_header","spec_version":"UML_OS-v3.8-OS","name":"hand <run> & co","replay_token":"5eed0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab","job_id":"5eed0123","seed":7,"task_type":"multiclass","world_size":1,"backend_hash":"bacd","driver":"cpu_driver","device":"cpu x1 (f64)","abi":"1.2","modules":[{"name":"umlos_cpu_driver","version":"0.1","sha256":"aa11"},{"name":"umlos_core","version":"0.1","sha256":"bb22"}],"operators":{"update_op":"UML_OS.Update_v1"}})J";
  t += "\n";
  const char* actions[] = {"optimize", "optimize", "probe",    "optimize", "switch",   "optimize",
                           "probe",    "augment",  "optimize", "optimize", "optimize", "optimize"};
  for (int i = 1; i <= 12; ++i) {
    const bool proto = i >= 5;
    const std::string sil = i >= 3 ? (i >= 7 ? "0.61" : "0.42") : "null";
    t += "{\"record\":\"iter\",\"t\":" + std::to_string(i) + ",\"state\":\"" + (proto ? "S_PROTO" : "S_P") +
         "\",\"action\":\"" + actions[i - 1] + "\",\"state_fp\":\"ff\",\"loss_total\":" + std::to_string(2.0 / i) +
         ",\"grad_norm\":" + std::to_string(0.5 + i * 0.125) + ",\"sil_mean\":" + sil + ",\"resource_util\":0" +
         // The held-out metric comes with the functional fingerprint, every 4th step here.
         (i % 4 == 0 ? ",\"val_accuracy\":" + std::to_string(0.5 + i * 0.03125) : std::string()) + "}\n";
  }
  t +=
      R"J({"record":"run_end","status":"success","t":12,"state_fp":"ff00","functional_fp":null,"rng_fingerprint":"cc","replay_token":"5eed","task_type":"multiclass","world_size":1,"backend_hash":"bacd","val_accuracy":0.875,"tape_digest":"7a9e"})J";
  t += "\n";
  write_text(dir + "/trace.jsonl", t);
  write_text(dir + "/memory_plan.svg", kPlan);
  return dir;
}

}  // namespace

TEST_CASE("The report of a run is one well-formed self-contained page with its facts, curves and timelines",
          "[report]") {
  std::string dir = hand_run();
  std::string html = render_report(dir);
  INFO(html.substr(0, 2000));
  CHECK(markup_problem(html) == "");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // Facts, escaped.
  CHECK(html.find("hand &lt;run&gt; &amp; co") != std::string::npos);
  CHECK(html.find("hand <run>") == std::string::npos);
  CHECK(html.find("5eed0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab") != std::string::npos);
  CHECK(html.find("cpu x1 (f64)") != std::string::npos);
  CHECK(html.find("umlos_cpu_driver") != std::string::npos);
  CHECK(html.find("umlos_core") != std::string::npos);
  CHECK(html.find("7a9e") != std::string::npos);
  CHECK(html.find("0.875") != std::string::npos);
  // Curves: loss_total, the held-out metric, grad_norm.
  CHECK(html.find("id=\"chart-loss_total\"") != std::string::npos);
  CHECK(html.find("id=\"chart-val_accuracy\"") != std::string::npos);
  CHECK(html.find("id=\"chart-grad_norm\"") != std::string::npos);
  CHECK(count(html, "<polyline") == 3);  // the sparse held-out metric is one line too
  CHECK(html.find("3 values; first 0.625 (t=4), last 0.875 (t=12)") != std::string::npos);
  CHECK(html.find("12 values; first 2 (t=1), last 0.166667 (t=12), min 0.166667, max 2") != std::string::npos);
  // Timelines: 12 iterations give 8 action runs and 2 state runs.
  CHECK(html.find("id=\"timeline-action\"") != std::string::npos);
  CHECK(count(html, "<rect class=\"mark optimize\"") == 4);
  CHECK(count(html, "<rect class=\"mark probe\"") == 2);
  CHECK(count(html, "<rect class=\"mark switch\"") == 1);
  CHECK(count(html, "<rect class=\"mark augment\"") == 1);
  CHECK(html.find("t=9..12 optimize") != std::string::npos);
  CHECK(count(html, "<rect class=\"mark S_P\"") == 1);
  CHECK(count(html, "<rect class=\"mark S_PROTO\"") == 1);
  CHECK(html.find("t=5..12 S_PROTO") != std::string::npos);
  CHECK(html.find("optimize (8)") != std::string::npos);
  // sil_mean: the two probes (t=3, t=7) are the changes.
  CHECK(count(html, "sil_mean=") == 2);
  CHECK(html.find("t=7 sil_mean=0.61") != std::string::npos);
  // The memory plan, as an image of the file's own bytes.
  CHECK(html.find("src=\"data:image/svg+xml;base64," + base64_of(kPlan) + "\"") != std::string::npos);
  CHECK(html.find("plan-marker") == std::string::npos);
  // Self-contained: no script, no external reference.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(count(html, "src=") == 1);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(std::regex_search(html, std::regex("https?://(?!www\\.w3\\.org/2000/svg\")")) == false);
  // Deterministic.
  CHECK(render_report(dir) == html);
}

TEST_CASE("umlos report writes the page of a real run atomically and refuses a missing run folder", "[report]") {
  std::string base = temp_dir("report-run");
  write_text(base + "/m.yaml",
             walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core")}, kWalkOperators, 25));
  RunOptions o;
  o.run_dir = base + "/run";
  o.quiet = true;
  REQUIRE(run_manifest(base + "/m.yaml", o) == 0);
  CommandResult r = run_umlos("report '" + o.run_dir + "' -o '" + base + "/report.html'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  std::string html = read_text(base + "/report.html");
  CHECK(html == render_report(o.run_dir));
  CHECK(markup_problem(html) == "");
  CHECK(html.find("walk_test") != std::string::npos);
  CHECK(html.find("id=\"chart-loss_total\"") != std::string::npos);
  CHECK(count(html, "<rect class=\"mark probe\"") == 3);  // t = 7, 14, 21
  for (const auto& e : fs::directory_iterator(base)) {
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }

  CommandResult none = run_umlos("report /nonexistent/umlos-run -o '" + base + "/x.html'");
  CHECK(none.exit_status == exit_code_for(UMLOS_NOT_FOUND));
  CHECK(none.output.find("run folder '/nonexistent/umlos-run' does not exist") != std::string::npos);
  CHECK_FALSE(fs::exists(base + "/x.html"));
  CommandResult usage = run_umlos("report '" + o.run_dir + "'");
  CHECK(usage.exit_status == 2);
}

TEST_CASE("The report refuses a trace line that is not a JSON record, naming the file and line", "[report]") {
  std::string dir = hand_run();
  std::string t = read_text(dir + "/trace.jsonl");
  write_text(dir + "/trace.jsonl", t + "{\"record\":\"iter\",\"t\":13,\n");
  try {
    render_report(dir);
    FAIL("a broken trace was accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DATA_LOSS);
    CHECK(std::string(f.what()).find(dir + "/trace.jsonl:15:") != std::string::npos);
  }
}

TEST_CASE("A long run's curves are reduced to at most 2000 points per series, keeping the extremes", "[report]") {
  std::string dir = temp_dir("report-long");
  std::string t = "{\"record\":\"run_header\",\"name\":\"long\"}\n";
  for (int i = 1; i <= 20000; ++i) {
    const double loss = i == 12345 ? 99.0 : 1.0 + (i % 10) * 0.01;
    t += "{\"record\":\"iter\",\"t\":" + std::to_string(i) + ",\"state\":\"S_P\",\"action\":\"" +
         (i % 100 == 0 ? "probe" : "optimize") + "\",\"loss_total\":" + std::to_string(loss) + "}\n";
  }
  write_text(dir + "/trace.jsonl", t);
  std::string html = render_report(dir);
  CHECK(markup_problem(html) == "");
  size_t p = html.find("<polyline");
  REQUIRE(p != std::string::npos);
  std::string pts = html.substr(p, html.find("/>", p) - p);
  CHECK(count(pts, ",") <= 2000);
  CHECK(html.find("max 99") != std::string::npos);
  CHECK(count(html, "<rect class=\"mark probe\"") == 200);
  CHECK(html.size() < 2'000'000);
}

TEST_CASE("A hostile run folder puts no script, event handler or link into the report", "[report][security]") {
  const std::string dir = temp_dir("report-hostile");
  const std::string x =
      R"(</script><script>alert(1)</script><img src=x onerror=alert(2)>\"><svg onload=alert(3)>javascript:alert(4)<!--)";
  json header = {{"record", "run_header"},
                 {"name", x},
                 {"driver", x},
                 {"device", x},
                 {"replay_token", x},
                 {"modules", json::array({{{"name", x}, {"version", x}, {"sha256", x}}})},
                 {"operators", {{x, x}}}};
  std::string t = header.dump() + "\n";
  for (int i = 1; i <= 4; ++i) {
    json r = {{"record", "iter"},
              {"t", i},
              {"action", i % 2 ? x : "probe"},
              {"state", x},
              {"loss_total", 1.0 / i},
              {"sil_mean", 0.5},
              {"equations", json::array({x, "z0 <!-- " + x, "y[1] = z0 * z1 + -2"})}};
    t += r.dump() + "\n";
  }
  t +=
      json({{"record", "run_end"}, {"status", "failed"}, {"failure_code", x}, {"failure_operator", x}, {"state_fp", x}})
          .dump() +
      "\n";
  write_text(dir + "/trace.jsonl", t);
  write_text(dir + "/failure.json", json({{"message", x}}).dump());
  write_text(dir + "/value_arenas.json",
             json({{"strategy", x}, {"replans", x}, {"plan_hash", x}, {"arenas", {{x, {{"values", x}}}}}}).dump());
  const std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" onload=\"alert(5)\">"
      "<script>alert(6)</script><image href=\"x\" onerror=\"alert(7)\"/>"
      "<a xlink:href=\"javascript:alert(8)\"><rect width=\"9\" height=\"9\"/></a>"
      "<a href=\"https://evil.example/\"><text>x</text></a>"
      "<foreignObject><body xmlns=\"http://www.w3.org/1999/xhtml\"><iframe "
      "src=\"javascript:alert(9)\"></iframe></body></foreignObject>"
      "<set attributeName=\"onmouseover\" to=\"alert(10)\"/></svg>";
  write_text(dir + "/memory_plan.svg", svg);

  const std::string html = render_report(dir);
  INFO(html.substr(0, 3000));
  CHECK(injection_problem(html) == "");
  CHECK(markup_problem(html) == "");
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<!--") == std::string::npos);
  CHECK(html.find("<foreignObject") == std::string::npos);
  // The hostile text is shown, as text.
  CHECK(html.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  // The SVG is there, only as an image of its bytes.
  CHECK(count(html, "<img ") == 1);
  CHECK(html.find("src=\"data:image/svg+xml;base64," + base64_of(svg) + "\"") != std::string::npos);
}

TEST_CASE("The report shows no memory-plan file that is a symlink, too large or not a file", "[report][security]") {
  const std::string dir = hand_run();
  const std::string secret = temp_dir("report-secret") + "/id_key";
  write_text(secret, "<svg>PRIVATE KEY</svg>");
  fs::remove(dir + "/memory_plan.svg");
  fs::create_symlink(secret, dir + "/memory_plan.svg");
  std::string html = render_report(dir);
  CHECK(html.find(base64_of("<svg>PRIVATE KEY</svg>")) == std::string::npos);
  CHECK(html.find("memory_plan.svg is not a regular file") != std::string::npos);
  CHECK(injection_problem(html) == "");

  fs::remove(dir + "/memory_plan.svg");
  fs::create_directory(dir + "/memory_plan.svg");
  html = render_report(dir);
  CHECK(html.find("memory_plan.svg is not a regular file") != std::string::npos);
  CHECK(html.find("data:image") == std::string::npos);
}
