// dataset.cpp — strict import, immutable placement, verification and
// bootstrap loading of data sets (docs/data.md).
#include "dataset.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "cbor.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "procedure.hpp"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kRecordName = "UML_OS.Data.Manifest_v1";
constexpr const char* kRecordFile = "dataset.json";
// The most classes a multiclass data set may have (2^24): labels are read as
// binary64 and must convert exactly to an integer class index, and a wider
// one-hot output is far beyond any model the procedure trains.
constexpr int64_t kMaxClasses = int64_t{1} << 24;
constexpr const char* kSplitRule =
    "row i (0-based, file order) goes to val iff floor((i+1)*n_val/n) > floor(i*n_val/n), "
    "n_val = floor(n*val_fraction + 0.5); all other rows go to train, order kept";

[[noreturn]] void fail(umlos_status code, const std::string& msg) { throw Failure(code, msg); }

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// ------------------------------------------------------------ raw bytes

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void require_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(UMLOS_NOT_FOUND, path + ": " + what + " does not exist (or is not a file)");
}

// The text of a raw file, decompressed when it is gzip (by name or magic).
std::string read_raw(const std::string& path, std::vector<uint8_t>* raw_bytes) {
  require_file(path, "data file");
  std::vector<uint8_t> bytes = read_file(path);
  const bool gz = ends_with(path, ".gz") || (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b);
  std::string text = gz ? gunzip(bytes, path) : std::string(bytes.begin(), bytes.end());
  if (raw_bytes) *raw_bytes = std::move(bytes);
  return text;
}

// ------------------------------------------------------------ CSV tables

struct Field {
  std::string_view text;
  int column = 0;  // 1-based byte column of its first character
};
struct Row {
  int line = 0;  // 1-based line in the (decompressed) file
  std::vector<Field> fields;
  int end_column = 1;  // column just past the last character
};

enum class Delim { Comma, Space };

// Splits `text` into rows. Every line must hold a row (no blank lines); a
// final newline is optional; "\r\n" endings are accepted.
std::vector<Row> split_rows(const std::string& text, Delim delim, const std::string& file, int first_line) {
  std::vector<Row> rows;
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    size_t end = eol;
    if (end > pos && text[end - 1] == '\r') --end;
    ++line;
    std::string_view l(text.data() + pos, end - pos);
    pos = eol + 1;
    if (line < first_line) continue;
    Row r;
    r.line = line;
    r.end_column = static_cast<int>(l.size()) + 1;
    if (delim == Delim::Comma) {
      size_t s = 0;
      for (;;) {
        size_t c = l.find(',', s);
        size_t e = c == std::string_view::npos ? l.size() : c;
        r.fields.push_back(Field{l.substr(s, e - s), static_cast<int>(s) + 1});
        if (c == std::string_view::npos) break;
        s = c + 1;
      }
    } else {
      size_t s = 0;
      while (s < l.size()) {
        while (s < l.size() && (l[s] == ' ' || l[s] == '\t')) ++s;
        if (s >= l.size()) break;
        size_t e = s;
        while (e < l.size() && l[e] != ' ' && l[e] != '\t') ++e;
        r.fields.push_back(Field{l.substr(s, e - s), static_cast<int>(s) + 1});
        s = e;
      }
    }
    if (l.empty() || (r.fields.empty())) {
      fail(UMLOS_DATA_MANIFEST_INVALID,
           file + ":" + std::to_string(line) + ":1: line is empty; expected a row of fields");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string at(const std::string& file, const Row& r, int column) {
  return file + ":" + std::to_string(r.line) + ":" + std::to_string(column);
}

double parse_number(const std::string& file, const Row& r, size_t k) {
  const Field& f = r.fields[k];
  double v = 0;
  const char* b = f.text.data();
  const char* e = b + f.text.size();
  auto res = std::from_chars(b, e, v, std::chars_format::general);
  if (f.text.empty() || res.ec != std::errc() || res.ptr != e || !std::isfinite(v)) {
    fail(UMLOS_DATA_MANIFEST_INVALID, at(file, r, f.column) + ": field " + std::to_string(k + 1) +
                                          ": expected a finite decimal number, found " + quote(std::string(f.text)));
  }
  return v;
}

void check_field_count(const std::string& file, const Row& r, size_t expected, const std::string& why) {
  if (r.fields.size() == expected) return;
  const int col = r.fields.size() > expected ? r.fields[expected].column : r.end_column;
  fail(UMLOS_DATA_MANIFEST_INVALID, at(file, r, col) + ": expected " + std::to_string(expected) + " fields (" + why +
                                        "), found " + std::to_string(r.fields.size()));
}

// Checks a label against the task; `C` is the class count for multiclass
// (0: not known yet, only the integer and sign checks apply).
void check_label(TaskType task, double v, int64_t C, const std::string& where) {
  if (task == TaskType::Regression) return;
  if (!(std::floor(v) == v)) fail(UMLOS_DATA_MANIFEST_INVALID, where + ": label: expected an integer, found " + num(v));
  if (task == TaskType::Binary) {
    if (v != 0.0 && v != 1.0)
      fail(UMLOS_DATA_MANIFEST_INVALID, where + ": label: expected 0 or 1 (binary task), found " + num(v));
    return;
  }
  if (v < 0 || v >= static_cast<double>(C > 0 ? C : kMaxClasses)) {
    fail(UMLOS_DATA_MANIFEST_INVALID, where + ": label: expected an integer in [0, " +
                                          (C > 0 ? std::to_string(C) : std::to_string(kMaxClasses) + " (2^24)") +
                                          "), found " + num(v));
  }
}

// A parsed table: features row-major, labels, and where each label came from.
struct Table {
  uint64_t rows = 0;
  int64_t cols = 0;  // features per row
  std::vector<double> x, y;
  std::vector<std::string> label_where;
};

// ------------------------------------------------------------ records

std::string hash16(const Digest& d) { return to_hex(d).substr(0, 16); }

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return s != "." && s != ".." && s[0] != '.';
}

struct Stats {
  std::vector<double> offset, scale;
  double mean = 0, std = 0;
};

// III.B on the train split, ascending row index, binary64.
Stats compute_stats(const SplitData& train, int64_t D, TaskType task) {
  Stats s;
  s.offset.assign(D, 0.0);
  s.scale.assign(D, 0.0);
  std::vector<double> mx(D, 0.0);
  for (uint64_t i = 0; i < train.rows; ++i) {
    for (int64_t j = 0; j < D; ++j) {
      const double v = train.x[i * D + j];
      if (i == 0 || v < s.offset[j]) s.offset[j] = v;
      if (i == 0 || v > mx[j]) mx[j] = v;
    }
  }
  for (int64_t j = 0; j < D; ++j) {
    const double range = mx[j] - s.offset[j];
    s.scale[j] = range > 0 ? 1.0 / range : 0.0;
  }
  if (task == TaskType::Regression && train.rows > 0) {
    double sum = 0;
    for (uint64_t i = 0; i < train.rows; ++i) sum += train.y[i];
    s.mean = sum / static_cast<double>(train.rows);
    double ss = 0;
    for (uint64_t i = 0; i < train.rows; ++i) {
      const double d = train.y[i] - s.mean;
      ss += d * d;
    }
    s.std = std::sqrt(ss / static_cast<double>(train.rows));
  }
  return s;
}

std::string split_file_text(const SplitData& s, int64_t D, TaskType task) {
  std::string out;
  out.reserve(s.rows * (D + 1) * 6);
  char buf[64];
  for (uint64_t i = 0; i < s.rows; ++i) {
    for (int64_t j = 0; j < D; ++j) {
      auto r = std::to_chars(buf, buf + sizeof buf, s.x[i * D + j]);
      out.append(buf, r.ptr);
      out.push_back(',');
    }
    if (task == TaskType::Regression) {
      auto r = std::to_chars(buf, buf + sizeof buf, s.y[i]);
      out.append(buf, r.ptr);
    } else {
      out += std::to_string(static_cast<int64_t>(s.y[i]));
    }
    out.push_back('\n');
  }
  return out;
}

// Parses one split file of a data set folder: D features then the label.
SplitData parse_split(const std::string& path, const std::string& text, int64_t D, TaskType task, int64_t C) {
  SplitData s;
  std::vector<Row> rows = split_rows(text, Delim::Comma, path, 1);
  s.rows = rows.size();
  s.x.reserve(rows.size() * D);
  s.y.reserve(rows.size());
  for (const Row& r : rows) {
    check_field_count(path, r, static_cast<size_t>(D + 1), std::to_string(D) + " features and the label, dataset.json");
    for (int64_t j = 0; j < D; ++j) s.x.push_back(parse_number(path, r, j));
    const double y = parse_number(path, r, D);
    check_label(task, y, C, at(path, r, r.fields[D].column));
    s.y.push_back(y);
  }
  return s;
}

// Reads dataset.json strictly (DATA_MANIFEST_INVALID naming the key).
DatasetRecord parse_record(const std::string& dir, std::string* bytes_out = nullptr) {
  const std::string file = (fs::path(dir) / kRecordFile).string();
  require_file(file, "data set record");
  const std::string bytes = read_text_file(file);
  if (bytes_out) *bytes_out = bytes;
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    fail(UMLOS_DATA_MANIFEST_INVALID, file + ": not valid JSON: " + e.what());
  }
  auto bad = [&](const std::string& key, const std::string& expected, const json* v) -> void {
    fail(UMLOS_DATA_MANIFEST_INVALID,
         file + ": key '" + key + "': expected " + expected + ", found " + (v ? v->dump() : std::string("nothing")));
  };
  auto get = [&](const json& obj, const std::string& key, const std::string& path) -> const json& {
    if (!obj.is_object() || !obj.contains(key)) bad(path, "a value", nullptr);
    return obj.at(key);
  };
  auto text = [&](const json& obj, const std::string& key, const std::string& path) {
    const json& v = get(obj, key, path);
    if (!v.is_string()) bad(path, "a string", &v);
    return v.get<std::string>();
  };
  auto uint = [&](const json& obj, const std::string& key, const std::string& path) {
    const json& v = get(obj, key, path);
    if (!v.is_number_unsigned()) bad(path, "an unsigned integer", &v);
    return v.get<uint64_t>();
  };
  auto real = [&](const json& obj, const std::string& key, const std::string& path) {
    const json& v = get(obj, key, path);
    if (!v.is_number()) bad(path, "a number", &v);
    return v.get<double>();
  };
  DatasetRecord r;
  r.dir = dir;
  if (text(j, "record", "record") != kRecordName) bad("record", quote(kRecordName), &j.at("record"));
  if (uint(j, "format", "format") != 1) bad("format", "1", &j.at("format"));
  r.id = text(j, "id", "id");
  r.version = text(j, "version", "version");
  const std::string task = text(j, "task_type", "task_type");
  auto t = parse_task(task);
  if (!t) bad("task_type", "multiclass, binary or regression", &j.at("task_type"));
  r.task = *t;
  r.num_features = static_cast<int64_t>(uint(j, "num_features", "num_features"));
  const uint64_t classes = uint(j, "num_classes", "num_classes");
  r.num_classes = classes > static_cast<uint64_t>(kMaxClasses) ? 0 : static_cast<int64_t>(classes);
  if (r.num_features < 1) bad("num_features", "at least 1", &j.at("num_features"));
  if (r.task == TaskType::Multiclass ? r.num_classes < 2 : r.num_classes != 1)
    bad("num_classes", r.task == TaskType::Multiclass ? "2 to 2^24" : "1", &j.at("num_classes"));
  const json& splits = get(j, "splits", "splits");
  for (const char* name : {"train", "val"}) {
    const std::string p = std::string("splits.") + name;
    const json& s = get(splits, name, p);
    SplitInfo& info = std::string(name) == "train" ? r.train : r.val;
    info.file = text(s, "file", p + ".file");
    if (info.file != std::string(name) + ".csv") bad(p + ".file", quote(std::string(name) + ".csv"), &s.at("file"));
    info.rows = uint(s, "rows", p + ".rows");
    const std::string h = text(s, "sha256", p + ".sha256");
    if (!digest_from_hex(h, info.sha256)) bad(p + ".sha256", "64 hexadecimal digits", &s.at("sha256"));
  }
  if (r.train.rows < 1) bad("splits.train.rows", "at least 1", &splits.at("train").at("rows"));
  const json& norm = get(j, "norm", "norm");
  for (const char* name : {"offset", "scale"}) {
    const std::string p = std::string("norm.") + name;
    const json& a = get(norm, name, p);
    if (!a.is_array() || a.size() != static_cast<size_t>(r.num_features))
      bad(p, "an array of " + std::to_string(r.num_features) + " numbers", &a);
    std::vector<double>& out = std::string(name) == "offset" ? r.offset : r.scale;
    for (size_t k = 0; k < a.size(); ++k) {
      if (!a[k].is_number()) bad(p + "[" + std::to_string(k) + "]", "a number", &a[k]);
      out.push_back(a[k].get<double>());
    }
  }
  if (r.task == TaskType::Regression) {
    const json& tg = get(j, "target", "target");
    r.target_mean = real(tg, "mean", "target.mean");
    r.target_std = real(tg, "std", "target.std");
  }
  r.record_sha256 = sha256(bytes);
  return r;
}

json record_json(const DatasetRecord& r, const json& source) {
  json splits = json::object();
  for (const SplitInfo* s : {&r.train, &r.val}) {
    splits[s == &r.train ? "train" : "val"] = {{"file", s->file}, {"rows", s->rows}, {"sha256", to_hex(s->sha256)}};
  }
  json j = {{"record", kRecordName},
            {"format", 1},
            {"id", r.id},
            {"version", r.version},
            {"task_type", task_name(r.task)},
            {"num_features", r.num_features},
            {"num_classes", r.num_classes},
            {"splits", splits},
            {"norm",
             {{"offset", r.offset},
              {"scale", r.scale},
              {"rule",
               "x_pre = clamp((x - offset) * scale, 0, 1); offset = min, scale = 1/(max - min) or 0 "
               "when max == min; over the train split, ascending row index, binary64"}}},
            {"source", source}};
  if (r.task == TaskType::Regression) {
    j["target"] = {{"mean", r.target_mean},
                   {"std", r.target_std},
                   {"rule",
                    "population mean and standard deviation of the train targets, ascending row index, "
                    "binary64; y_pre = (y - mean) / max(std, 1e-12)"}};
  }
  return j;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::atomic<int> g_tmp_counter{0};

std::string resolve_root(const std::string& root) { return root.empty() ? umlos_root() : root; }

void make_read_only(const std::string& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) != 0) fail(UMLOS_IO_ERROR, "cannot chmod '" + path + "': " + std::strerror(errno));
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(UMLOS_IO_ERROR, "cannot open folder '" + dir + "': " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail(UMLOS_IO_ERROR, "cannot fsync folder '" + dir + "': " + std::strerror(err));
}

void remove_tree(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  // Read-only folders must be made writable before their entries can go.
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->is_directory(ec)) ::chmod(it->path().c_str(), 0755);
  ::chmod(dir.c_str(), 0755);
  fs::remove_all(dir, ec);
}

}  // namespace

const char* task_name(TaskType t) {
  const char* name = umlos_task_name(static_cast<int32_t>(t));
  return name ? name : "?";
}

std::optional<TaskType> parse_task(const std::string& s) {
  const int32_t t = umlos_task_from_name(s.c_str());
  if (t < 0) return std::nullopt;
  return static_cast<TaskType>(t);
}

// ------------------------------------------------------------ verification

Dataset verify_dataset(const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(UMLOS_NOT_FOUND, dir + ": data set folder does not exist");
  std::string bytes;
  Dataset d;
  d.record = parse_record(dir, &bytes);
  DatasetRecord& r = d.record;
  const std::string expected_name = r.id + "-" + r.version + "-" + hash16(r.record_sha256);
  const std::string actual_name = fs::path(dir).filename().string();
  if (actual_name != expected_name) {
    fail(UMLOS_DATA_HASH_MISMATCH, dir + ": folder name " + quote(actual_name) +
                                       " does not match its record: expected " + quote(expected_name) +
                                       " (<id>-<version>-<first 16 hex digits of SHA-256(dataset.json)>)");
  }
  for (SplitInfo* s : {&r.train, &r.val}) {
    const std::string path = (fs::path(dir) / s->file).string();
    require_file(path, "split file");
    const std::vector<uint8_t> b = read_file(path);
    const Digest h = sha256(b);
    if (h != s->sha256) {
      fail(UMLOS_DATA_HASH_MISMATCH,
           path + ": SHA-256 " + to_hex(h) + " differs from the one in " + kRecordFile + ": " + to_hex(s->sha256));
    }
    SplitData data = parse_split(path, std::string(b.begin(), b.end()), r.num_features, r.task,
                                 r.task == TaskType::Multiclass ? r.num_classes : 0);
    if (data.rows != s->rows) {
      fail(UMLOS_DATA_MANIFEST_INVALID,
           path + ": " + std::to_string(data.rows) + " rows, " + kRecordFile + " says " + std::to_string(s->rows));
    }
    (s == &r.train ? d.train : d.val) = std::move(data);
  }
  const Stats st = compute_stats(d.train, r.num_features, r.task);
  for (int64_t j = 0; j < r.num_features; ++j) {
    if (!same_bits(st.offset[j], r.offset[j]) || !same_bits(st.scale[j], r.scale[j])) {
      fail(UMLOS_DATA_MANIFEST_INVALID, dir + "/" + kRecordFile + ": key 'norm' feature " + std::to_string(j) +
                                            ": recorded offset " + num(r.offset[j]) + ", scale " + num(r.scale[j]) +
                                            "; recomputed from train.csv: offset " + num(st.offset[j]) + ", scale " +
                                            num(st.scale[j]));
    }
  }
  if (r.task == TaskType::Regression && (!same_bits(st.mean, r.target_mean) || !same_bits(st.std, r.target_std))) {
    fail(UMLOS_DATA_MANIFEST_INVALID, dir + "/" + kRecordFile + ": key 'target': recorded mean " + num(r.target_mean) +
                                          ", std " + num(r.target_std) + "; recomputed from train.csv: mean " +
                                          num(st.mean) + ", std " + num(st.std));
  }
  return d;
}

// ------------------------------------------------------------ import

DatasetRecord import_dataset(const ImportOptions& o) {
  if (!valid_name(o.id))
    fail(UMLOS_INVALID_ARGUMENT,
         "data set id " + quote(o.id) + ": expected 1..64 of [A-Za-z0-9_.] not starting with '.'");
  if (!valid_name(o.version))
    fail(UMLOS_INVALID_ARGUMENT,
         "data set version " + quote(o.version) + ": expected 1..64 of [A-Za-z0-9_.] not starting with '.'");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0))
    fail(UMLOS_INVALID_ARGUMENT, "val fraction: expected a number in [0, 1), found " + num(o.val_fraction));
  if (o.header != "none" && o.header != "line" && o.header != "sklearn")
    fail(UMLOS_INVALID_ARGUMENT, "header: expected none, line or sklearn, found " + quote(o.header));
  if (o.delimiter != "auto" && o.delimiter != "comma" && o.delimiter != "space")
    fail(UMLOS_INVALID_ARGUMENT, "delimiter: expected auto, comma or space, found " + quote(o.delimiter));
  if (o.num_classes < 0 || o.num_classes == 1 || o.num_classes > kMaxClasses ||
      (o.num_classes != 0 && o.task != TaskType::Multiclass))
    fail(UMLOS_INVALID_ARGUMENT, "num classes: expected 0 (infer) or 2 to 2^24, and only for multiclass, found " +
                                     std::to_string(o.num_classes));

  // ---- read and parse the raw table
  const std::string& file = o.features_file;
  std::vector<uint8_t> raw;
  const std::string text = read_raw(file, &raw);
  json source_files = json::array();
  source_files.push_back({{"name", fs::path(file).filename().string()}, {"sha256", to_hex(sha256(raw))}});

  Delim delim = Delim::Comma;
  const int first_line = o.header == "none" ? 1 : 2;
  if (o.delimiter == "space") delim = Delim::Space;
  if (o.delimiter == "auto") {
    size_t p = 0;
    for (int l = 1; l < first_line && p != std::string::npos; ++l) {
      p = text.find('\n', p);
      if (p != std::string::npos) ++p;
    }
    const std::string first = p == std::string::npos ? std::string() : text.substr(p, text.find('\n', p) - p);
    delim = first.find(',') != std::string::npos ? Delim::Comma : Delim::Space;
  }
  std::vector<Row> rows = split_rows(text, delim, file, first_line);
  if (rows.empty()) fail(UMLOS_DATA_MANIFEST_INVALID, file + ": no data rows");
  const size_t ncols = rows[0].fields.size();
  const bool has_target_file = !o.target_file.empty();
  int64_t label_col = -1;
  if (!has_target_file) {
    if (o.label_column == "last") {
      label_col = static_cast<int64_t>(ncols) - 1;
    } else if (o.label_column == "first") {
      label_col = 0;
    } else {
      int64_t c = -1;
      auto res = std::from_chars(o.label_column.data(), o.label_column.data() + o.label_column.size(), c);
      if (res.ec != std::errc() || res.ptr != o.label_column.data() + o.label_column.size() || c < 0)
        fail(UMLOS_INVALID_ARGUMENT,
             "label column: expected last, first or a 0-based column number, found " + quote(o.label_column));
      label_col = c;
    }
    if (label_col >= static_cast<int64_t>(ncols) || ncols < 2)
      fail(UMLOS_INVALID_ARGUMENT, at(file, rows[0], 1) + ": label column " + std::to_string(label_col) +
                                       " (0-based) needs at least " +
                                       std::to_string(std::max<int64_t>(label_col + 1, 2)) +
                                       " fields per row, the first row has " + std::to_string(ncols));
  }
  Table t;
  t.rows = rows.size();
  t.cols = has_target_file ? static_cast<int64_t>(ncols) : static_cast<int64_t>(ncols) - 1;
  t.x.reserve(t.rows * t.cols);
  const std::string count_why = "as on line " + std::to_string(rows[0].line);
  for (const Row& r : rows) {
    check_field_count(file, r, ncols, count_why);
    for (size_t k = 0; k < ncols; ++k) {
      const double v = parse_number(file, r, k);
      if (static_cast<int64_t>(k) == label_col) {
        t.y.push_back(v);
        t.label_where.push_back(at(file, r, r.fields[k].column));
      } else {
        t.x.push_back(v);
      }
    }
  }
  if (has_target_file) {
    std::vector<uint8_t> traw;
    const std::string ttext = read_raw(o.target_file, &traw);
    source_files.push_back({{"name", fs::path(o.target_file).filename().string()}, {"sha256", to_hex(sha256(traw))}});
    std::vector<Row> trows = split_rows(ttext, Delim::Space, o.target_file, 1);
    if (trows.size() != t.rows) {
      fail(UMLOS_DATA_MANIFEST_INVALID, o.target_file + ": " + std::to_string(trows.size()) + " target rows, but " +
                                            file + " has " + std::to_string(t.rows) + " data rows");
    }
    for (const Row& r : trows) {
      check_field_count(o.target_file, r, 1, "one target value per line");
      t.y.push_back(parse_number(o.target_file, r, 0));
      t.label_where.push_back(at(o.target_file, r, r.fields[0].column));
    }
  }
  if (o.header == "sklearn") {
    // scikit-learn's first line: "n_samples,n_features,class names..."
    const std::string header_line = text.substr(0, text.find('\n'));  // outlives the views in `h`
    std::vector<Row> h = split_rows(header_line, Delim::Comma, file, 1);
    if (h.empty())
      fail(UMLOS_DATA_MANIFEST_INVALID,
           file + ":1: sklearn header: the line is empty, expected n_samples,n_features,class names...");
    const Row& hr = h.front();
    if (hr.fields.size() < 2) check_field_count(file, hr, 2, "sklearn header: n_samples,n_features,...");
    const double n = parse_number(file, hr, 0), dd = parse_number(file, hr, 1);
    if (n != static_cast<double>(t.rows))
      fail(UMLOS_DATA_MANIFEST_INVALID, at(file, hr, hr.fields[0].column) + ": the header declares " + num(n) +
                                            " samples, the file has " + std::to_string(t.rows) + " data rows");
    if (dd != static_cast<double>(t.cols))
      fail(UMLOS_DATA_MANIFEST_INVALID, at(file, hr, hr.fields[1].column) + ": the header declares " + num(dd) +
                                            " features, the rows have " + std::to_string(t.cols));
  }
  // ---- labels
  int64_t C = o.task == TaskType::Multiclass ? o.num_classes : 1;
  for (uint64_t i = 0; i < t.rows; ++i) check_label(o.task, t.y[i], o.num_classes, t.label_where[i]);
  if (o.task == TaskType::Multiclass && C == 0) {
    double mx = 0;
    for (double v : t.y) mx = std::max(mx, v);
    C = static_cast<int64_t>(mx) + 1;
    if (C < 2)
      fail(UMLOS_DATA_MANIFEST_INVALID, file + ": every label is 0; a multiclass data set needs at least 2 classes");
  }

  // ---- split (deterministic, documented in kSplitRule)
  const uint64_t n = t.rows;
  const uint64_t n_val = static_cast<uint64_t>(std::floor(static_cast<double>(n) * o.val_fraction + 0.5));
  if (n_val >= n)
    fail(UMLOS_INVALID_ARGUMENT,
         file + ": val fraction " + num(o.val_fraction) + " of " + std::to_string(n) + " rows leaves no train row");
  Dataset d;
  DatasetRecord& r = d.record;
  r.id = o.id;
  r.version = o.version;
  r.task = o.task;
  r.num_features = t.cols;
  r.num_classes = C;
  for (uint64_t i = 0; i < n; ++i) {
    const bool val = ((i + 1) * n_val) / n > (i * n_val) / n;
    SplitData& s = val ? d.val : d.train;
    s.x.insert(s.x.end(), t.x.begin() + i * t.cols, t.x.begin() + (i + 1) * t.cols);
    s.y.push_back(t.y[i]);
    ++s.rows;
  }
  const Stats st = compute_stats(d.train, t.cols, o.task);
  r.offset = st.offset;
  r.scale = st.scale;
  r.target_mean = st.mean;
  r.target_std = st.std;
  const std::string train_text = split_file_text(d.train, t.cols, o.task);
  const std::string val_text = split_file_text(d.val, t.cols, o.task);
  r.train = SplitInfo{"train.csv", d.train.rows, sha256(train_text)};
  r.val = SplitInfo{"val.csv", d.val.rows, sha256(val_text)};
  json source = {{"files", source_files},
                 {"rows", n},
                 {"label_column", has_target_file ? json(nullptr) : json(label_col)},
                 {"header", o.header},
                 {"delimiter", delim == Delim::Comma ? "comma" : "space"},
                 {"val_fraction", o.val_fraction},
                 {"split_rule", kSplitRule}};
  const std::string record_text = record_json(r, source).dump(2) + "\n";
  r.record_sha256 = sha256(record_text);

  // ---- placement: build in a temporary folder, then one rename
  const std::string datasets = (fs::path(resolve_root(o.root)) / "datasets").string();
  std::error_code ec;
  fs::create_directories(datasets, ec);
  if (ec) fail(UMLOS_IO_ERROR, "cannot create folder '" + datasets + "': " + ec.message());
  const std::string name = r.id + "-" + r.version + "-" + hash16(r.record_sha256);
  const std::string final_dir = (fs::path(datasets) / name).string();
  r.dir = final_dir;
  if (fs::exists(final_dir, ec)) {
    verify_dataset(final_dir);  // same content already placed: check it is intact
    return r;
  }
  const std::string tmp =
      (fs::path(datasets) / (".tmp-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(g_tmp_counter++)))
          .string();
  remove_tree(tmp);
  if (!fs::create_directory(tmp, ec) || ec) fail(UMLOS_IO_ERROR, "cannot create folder '" + tmp + "': " + ec.message());
  try {
    for (const auto& [fname, body] : {std::pair<std::string, const std::string*>{"train.csv", &train_text},
                                      {"val.csv", &val_text},
                                      {kRecordFile, &record_text}}) {
      const std::string p = (fs::path(tmp) / fname).string();
      write_file_atomic(p, *body);
      make_read_only(p, 0444);
    }
    make_read_only(tmp, 0555);
    fsync_dir(tmp);
    if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
      const int err = errno;
      if (err == EEXIST || err == ENOTEMPTY) {  // placed meanwhile by another import
        remove_tree(tmp);
        verify_dataset(final_dir);
        return r;
      }
      fail(UMLOS_IO_ERROR, "cannot rename '" + tmp + "' to '" + final_dir + "': " + std::strerror(err));
    }
    fsync_dir(datasets);
  } catch (...) {
    remove_tree(tmp);
    throw;
  }
  return r;
}

// ------------------------------------------------------------ manifests

namespace {

struct Entry {
  size_t index = 0;
  std::string id, version, split, path;
  Digest hash{};
};

std::string text_at(const cbor::Value& map, const char* key) {
  const cbor::Value* v = map.find(key);
  return v && v->kind() == cbor::Value::Kind::Text ? v->as_text() : std::string();
}

// config.data.<key> of the manifest, typed; MANIFEST_INVALID otherwise.
const cbor::Value* data_key(const Manifest& m, const std::string& key) { return lookup(m.config, "data." + key); }
[[noreturn]] void bad_config(const Manifest& m, const std::string& key, const std::string& expected,
                             const cbor::Value& v) {
  fail(UMLOS_MANIFEST_INVALID, m.where("config." + key) + ": key 'config." + key + "': expected " + expected +
                                   ", found " + cbor::diagnostic(v));
}

ImportOptions import_options(const Manifest& m, const Entry& e, TaskType task, const std::string& root) {
  ImportOptions o;
  o.id = e.id;
  o.version = e.version;
  o.task = task;
  o.root = root;
  auto resolve = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (fs::path(m.dir) / p).string(); };
  o.features_file = resolve(e.path);
  auto text_key = [&](const char* key, std::string& out) {
    if (const cbor::Value* v = data_key(m, key)) {
      if (v->kind() != cbor::Value::Kind::Text) bad_config(m, std::string("data.") + key, "a string", *v);
      out = v->as_text();
    }
  };
  if (const cbor::Value* v = data_key(m, "label_column")) {
    if (v->kind() == cbor::Value::Kind::UInt) {
      o.label_column = std::to_string(v->as_uint());
    } else if (v->kind() == cbor::Value::Kind::Text) {
      o.label_column = v->as_text();
    } else {
      bad_config(m, "data.label_column", "last, first or a 0-based column number", *v);
    }
  }
  text_key("header", o.header);
  text_key("delimiter", o.delimiter);
  std::string target;
  text_key("target_path", target);
  if (!target.empty()) o.target_file = resolve(target);
  if (const cbor::Value* v = data_key(m, "val_fraction")) {
    if (v->kind() != cbor::Value::Kind::Float && v->kind() != cbor::Value::Kind::UInt)
      bad_config(m, "data.val_fraction", "a number in [0, 1)", *v);
    o.val_fraction = v->as_double();
  }
  if (const cbor::Value* v = data_key(m, "num_classes")) {
    if (v->kind() != cbor::Value::Kind::UInt) bad_config(m, "data.num_classes", "an unsigned integer", *v);
    o.num_classes = static_cast<int64_t>(v->as_uint());
  }
  return o;
}

}  // namespace

std::optional<Dataset> resolve_manifest_datasets(const Manifest& m, const std::string& root_in) {
  const cbor::Value* list = m.canonical.find("datasets");
  if (!list || list->kind() != cbor::Value::Kind::Array || list->as_array().empty()) return std::nullopt;
  const std::string root = resolve_root(root_in);
  auto key = [](size_t i, const char* k) { return "datasets[" + std::to_string(i) + "]." + k; };

  std::vector<Entry> entries;
  const Entry* train = nullptr;
  const Entry* val = nullptr;
  for (size_t i = 0; i < list->as_array().size(); ++i) {
    const cbor::Value& v = list->as_array()[i];
    Entry e;
    e.index = i;
    e.id = text_at(v, "id");
    e.version = text_at(v, "version");
    e.split = text_at(v, "split");
    e.path = text_at(v, "path");
    digest_from_hex(text_at(v, "hash"), e.hash);
    if (!valid_name(e.id))
      fail(UMLOS_DATA_MANIFEST_INVALID, m.where(key(i, "id")) + ": key '" + key(i, "id") +
                                            "': expected 1..64 of [A-Za-z0-9_.] not starting with '.', found " +
                                            quote(e.id));
    if (!valid_name(e.version))
      fail(UMLOS_DATA_MANIFEST_INVALID, m.where(key(i, "version")) + ": key '" + key(i, "version") +
                                            "': expected 1..64 of [A-Za-z0-9_.] not starting with '.', found " +
                                            quote(e.version));
    entries.push_back(e);
  }
  for (const Entry& e : entries) {
    const Entry& first = entries[0];
    if (e.id != first.id || e.version != first.version)
      fail(UMLOS_DATA_MANIFEST_INVALID, m.where(key(e.index, "id")) + ": key '" + key(e.index, "id") +
                                            "': every entry must name the same data set as datasets[0] (" + first.id +
                                            " version " + first.version + "), found " + e.id + " version " + e.version);
    const Entry*& slot = e.split == "train" ? train : val;
    if (slot)
      fail(UMLOS_DATA_MANIFEST_INVALID, m.where(key(e.index, "split")) + ": key '" + key(e.index, "split") +
                                            "': a second '" + e.split + "' entry (the first is datasets[" +
                                            std::to_string(slot->index) + "])");
    slot = &e;
  }
  if (!train)
    fail(UMLOS_DATA_MANIFEST_INVALID, m.where("datasets") +
                                          ": key 'datasets': expected an entry with split: train, "
                                          "found only val");

  std::string task_text = "multiclass";
  if (const cbor::Value* tt = lookup(m.config, "task_type")) {
    if (tt->kind() != cbor::Value::Kind::Text) bad_config(m, "task_type", "multiclass, binary or regression", *tt);
    task_text = tt->as_text();
  }
  const auto task = parse_task(task_text);
  if (!task)
    fail(UMLOS_MANIFEST_INVALID, m.where("config.task_type") +
                                     ": key 'config.task_type': expected multiclass, "
                                     "binary or regression, found " +
                                     quote(task_text));

  // Look for the data set: <root>/datasets/<id>-<version>-<hash16> whose
  // record pins the train entry's hash.
  const std::string datasets = (fs::path(root) / "datasets").string();
  const std::string prefix = train->id + "-" + train->version + "-";
  std::vector<std::string> candidates;
  std::error_code ec;
  if (fs::is_directory(datasets, ec)) {
    for (const auto& de : fs::directory_iterator(datasets, ec)) {
      const std::string n = de.path().filename().string();
      if (n.size() == prefix.size() + 16 && n.compare(0, prefix.size(), prefix) == 0)
        candidates.push_back(de.path().string());
    }
  }
  std::sort(candidates.begin(), candidates.end());
  std::string found;
  for (const std::string& c : candidates) {
    try {
      DatasetRecord r = parse_record(c);
      if (r.train.sha256 == train->hash) {
        found = c;
        break;
      }
    } catch (const Failure&) {
      // A damaged folder of the same id: not the one the manifest pins.
    }
  }
  if (found.empty()) {
    const Entry* with_path = !train->path.empty() ? train : (val && !val->path.empty() ? val : nullptr);
    if (!with_path) {
      fail(UMLOS_NOT_FOUND, m.where(key(train->index, "hash")) + ": data set " + train->id + " version " +
                                train->version + " with train split SHA-256 " + to_hex(train->hash) + " is not under " +
                                datasets +
                                " (import it with `umlos dataset import`, or give the entry a path: to a raw file)");
    }
    const ImportOptions o = import_options(m, *with_path, *task, root);
    DatasetRecord r;
    try {
      r = import_dataset(o);
    } catch (const Failure& f) {
      throw Failure(f.code(),
                    m.where(key(with_path->index, "path")) + ": importing " + o.features_file + ": " + f.what());
    }
    if (r.train.sha256 != train->hash) {
      fail(UMLOS_DATA_HASH_MISMATCH,
           m.where(key(train->index, "hash")) + ": key '" + key(train->index, "hash") + "': importing " +
               o.features_file + " (config.data options, docs/data.md) gives a train split with SHA-256 " +
               to_hex(r.train.sha256) + ", the manifest pins " + to_hex(train->hash) + " (placed at " + r.dir + ")");
    }
    found = r.dir;
  }
  Dataset d = verify_dataset(found);
  if (val && d.record.val.sha256 != val->hash) {
    fail(UMLOS_DATA_HASH_MISMATCH, m.where(key(val->index, "hash")) + ": key '" + key(val->index, "hash") +
                                       "': the data set " + found + " has a val split with SHA-256 " +
                                       to_hex(d.record.val.sha256) + ", the manifest pins " + to_hex(val->hash));
  }
  if (d.record.task != *task) {
    fail(UMLOS_DATA_MANIFEST_INVALID, m.where("config.task_type") + ": key 'config.task_type' is " + task_name(*task) +
                                          " but the data set " + found + " is " + task_name(d.record.task));
  }
  return d;
}

void put_dataset_values(const Dataset& d, Host& host) {
  auto put = [&](const std::string& name, int32_t dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
    HostTensor h;
    h.dtype = dtype;
    h.shape.rank = static_cast<uint32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) h.shape.dims[i] = dims[i];
    const auto* p = static_cast<const uint8_t*>(data);
    h.data.assign(p, p + bytes);
    host.put_value(name, host.from_host(h));
  };
  const DatasetRecord& r = d.record;
  const int64_t D = r.num_features;
  for (const auto& [prefix, s] :
       {std::pair<std::string, const SplitData*>{"data.train.", &d.train}, {"data.val.", &d.val}}) {
    const int64_t N = static_cast<int64_t>(s->rows);
    put(prefix + "x", UMLOS_DTYPE_F64, {N, D}, s->x.data(), s->x.size() * sizeof(double));
    if (r.task == TaskType::Multiclass) {
      std::vector<int64_t> y(s->y.size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(s->y[i]);
      put(prefix + "y", UMLOS_DTYPE_I64, {N}, y.data(), y.size() * sizeof(int64_t));
    } else {
      put(prefix + "y", UMLOS_DTYPE_F64, {N}, s->y.data(), s->y.size() * sizeof(double));
    }
  }
  put("data.norm.offset", UMLOS_DTYPE_F64, {D}, r.offset.data(), r.offset.size() * sizeof(double));
  put("data.norm.scale", UMLOS_DTYPE_F64, {D}, r.scale.data(), r.scale.size() * sizeof(double));
  const int64_t C = r.num_classes;
  put("data.num_classes", UMLOS_DTYPE_I64, {}, &C, sizeof C);
  if (r.task == TaskType::Regression) {
    put("data.target.mean", UMLOS_DTYPE_F64, {}, &r.target_mean, sizeof(double));
    put("data.target.std", UMLOS_DTYPE_F64, {}, &r.target_std, sizeof(double));
  }
}

std::optional<DatasetRecord> load_datasets(const Manifest& m, Host& host) {
  std::optional<Dataset> d = resolve_manifest_datasets(m);
  if (!d) return std::nullopt;
  put_dataset_values(*d, host);
  return d->record;
}

}  // namespace umlos
