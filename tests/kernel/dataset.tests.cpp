// Data sets (docs/data.md): import of the vendored files, verification,
// immutability, atomic placement, bootstrap loading into values, and every
// malformed input with its status code, exit status and message.
#include <sys/stat.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dataset.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string vendored(const std::string& name) { return std::string(UMLOS_SOURCE_DIR) + "/data/" + name; }

ImportOptions digits_options(const std::string& root) {
  ImportOptions o;
  o.id = "digits";
  o.version = "1";
  o.task = TaskType::Multiclass;
  o.features_file = vendored("digits.csv.gz");
  o.root = root;
  return o;
}
ImportOptions cancer_options(const std::string& root) {
  ImportOptions o;
  o.id = "breast_cancer";
  o.version = "1";
  o.task = TaskType::Binary;
  o.header = "sklearn";
  o.features_file = vendored("breast_cancer.csv");
  o.root = root;
  return o;
}
ImportOptions diabetes_options(const std::string& root) {
  ImportOptions o;
  o.id = "diabetes";
  o.version = "1";
  o.task = TaskType::Regression;
  o.features_file = vendored("diabetes_data_raw.csv.gz");
  o.target_file = vendored("diabetes_target.csv.gz");
  o.root = root;
  return o;
}

// Imports a small CSV written on the fly; returns the failure (or OK).
Failure import_failure(const std::string& csv, ImportOptions o, const std::string& tag) {
  const std::string dir = temp_dir(tag);
  const std::string file = dir + "/in.csv";
  write_text(file, csv);
  o.features_file = file;
  o.root = dir + "/root";
  try {
    import_dataset(o);
  } catch (const Failure& f) {
    return f;
  }
  return Failure(UMLOS_OK, "");
}

ImportOptions small(TaskType task = TaskType::Multiclass) {
  ImportOptions o;
  o.id = "t";
  o.version = "1";
  o.task = task;
  return o;
}

int mode_of(const std::string& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

std::string manifest_with(const std::string& datasets, const std::string& config) {
  return "umlos_manifest: 1\nname: data_test\nmodules:\n  - path: \"" + module_path("umlos_cpu_driver") +
         "\"\n    sha256: " + to_hex(hash_module_file(module_path("umlos_cpu_driver"))) +
         "\ndriver: {name: cpu_driver}\noperators: {}\nconfig:\n" + config + "datasets:\n" + datasets;
}

}  // namespace

TEST_CASE("Importing digits gives 1797 rows of 64 features and 10 classes, split 1438/359", "[dataset]") {
  const std::string root = temp_dir("ds-digits");
  const DatasetRecord r = import_dataset(digits_options(root));
  CHECK(r.num_features == 64);
  CHECK(r.num_classes == 10);
  CHECK(r.task == TaskType::Multiclass);
  CHECK(r.train.rows + r.val.rows == 1797);
  CHECK(r.val.rows == 359);  // floor(1797 * 0.2 + 0.5)
  CHECK(fs::path(r.dir).parent_path() == fs::path(root) / "datasets");
  CHECK(fs::path(r.dir).filename().string() == "digits-1-" + to_hex(r.record_sha256).substr(0, 16));
  CHECK(to_hex(sha256(read_file(r.dir + "/train.csv"))) == to_hex(r.train.sha256));
  // Pixels are 0..16: offset 0 and scale 1/16 wherever the pixel varies.
  const Dataset d = verify_dataset(r.dir);
  CHECK(d.train.x.size() == d.train.rows * 64);
  CHECK(d.record.offset[10] == 0.0);
  CHECK(d.record.scale[10] == 1.0 / 16.0);
  CHECK(d.record.scale[0] == 0.0);  // pixel 0 is always 0: max == min
  // The first raw row (label 0) is train row 0 (row 0 never goes to val at 20 %).
  CHECK(d.train.y[0] == 0.0);
  CHECK(d.train.x[2] == 5.0);
}

TEST_CASE("Importing breast cancer checks the sklearn header and gives 569 binary rows of 30 features", "[dataset]") {
  const DatasetRecord r = import_dataset(cancer_options(temp_dir("ds-cancer")));
  CHECK(r.num_features == 30);
  CHECK(r.num_classes == 1);
  CHECK(r.train.rows + r.val.rows == 569);
  CHECK(r.val.rows == 114);
  const Dataset d = verify_dataset(r.dir);
  CHECK(d.train.x[0] == 17.99);
  for (double y : d.train.y) CHECK((y == 0.0 || y == 1.0));
}

TEST_CASE("Importing diabetes joins the target file and records target mean and std", "[dataset]") {
  const DatasetRecord r = import_dataset(diabetes_options(temp_dir("ds-diabetes")));
  CHECK(r.num_features == 10);
  CHECK(r.task == TaskType::Regression);
  CHECK(r.train.rows + r.val.rows == 442);
  const Dataset d = verify_dataset(r.dir);
  CHECK(d.train.x[0] == 59.0);
  CHECK(d.train.y[0] == 151.0);
  // Independent recomputation of the statistics (ascending order, binary64).
  double sum = 0;
  for (double y : d.train.y) sum += y;
  const double mean = sum / static_cast<double>(d.train.rows);
  double ss = 0;
  for (double y : d.train.y) ss += (y - mean) * (y - mean);
  CHECK(r.target_mean == mean);
  CHECK(r.target_std == std::sqrt(ss / static_cast<double>(d.train.rows)));
  CHECK(r.target_std > 70.0);
  CHECK(r.target_std < 85.0);
}

TEST_CASE("Import is deterministic and idempotent: same folder, same hashes, nothing rewritten", "[dataset]") {
  const std::string a = temp_dir("ds-det-a"), b = temp_dir("ds-det-b");
  const DatasetRecord ra = import_dataset(cancer_options(a));
  const DatasetRecord rb = import_dataset(cancer_options(b));
  CHECK(fs::path(ra.dir).filename() == fs::path(rb.dir).filename());
  CHECK(ra.train.sha256 == rb.train.sha256);
  CHECK(ra.val.sha256 == rb.val.sha256);
  const auto t0 = fs::last_write_time(ra.dir + "/dataset.json");
  const DatasetRecord again = import_dataset(cancer_options(a));
  CHECK(again.dir == ra.dir);
  CHECK(fs::last_write_time(ra.dir + "/dataset.json") == t0);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(a + "/datasets")) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 1);  // no temporary folder left behind
}

TEST_CASE("A placed data set is read-only: files 0444, folder 0555", "[dataset]") {
  const DatasetRecord r = import_dataset(cancer_options(temp_dir("ds-ro")));
  CHECK(mode_of(r.dir) == 0555);
  for (const char* f : {"train.csv", "val.csv", "dataset.json"}) CHECK(mode_of(r.dir + "/" + f) == 0444);
}

TEST_CASE("A failing import leaves no folder and no temporary folder under datasets", "[dataset]") {
  const std::string dir = temp_dir("ds-atomic");
  write_text(dir + "/in.csv", "1,2,0\n3,4,1\n5,x,0\n");
  ImportOptions o = small();
  o.features_file = dir + "/in.csv";
  o.root = dir + "/root";
  REQUIRE_THROWS_AS(import_dataset(o), Failure);
  size_t n = 0;
  if (fs::exists(dir + "/root/datasets"))
    for (const auto& e : fs::directory_iterator(dir + "/root/datasets")) {
      (void)e;
      ++n;
    }
  CHECK(n == 0);
}

TEST_CASE("The split rule puts every k-th row in val: 10 rows at 0.2 give val rows 4 and 9", "[dataset]") {
  const std::string dir = temp_dir("ds-split");
  std::string csv;
  for (int i = 0; i < 10; ++i) csv += std::to_string(i) + "," + std::to_string(i % 2) + "\n";
  write_text(dir + "/in.csv", csv);
  ImportOptions o = small();
  o.features_file = dir + "/in.csv";
  o.root = dir + "/root";
  const Dataset d = verify_dataset(import_dataset(o).dir);
  REQUIRE(d.val.rows == 2);
  CHECK(d.val.x == std::vector<double>{4, 9});
  CHECK(d.train.x == std::vector<double>{0, 1, 2, 3, 5, 6, 7, 8});
  CHECK(d.record.offset[0] == 0.0);
  CHECK(d.record.scale[0] == 1.0 / 8.0);
  CHECK(d.record.num_classes == 2);
}

TEST_CASE("A malformed field is DATA_MANIFEST_INVALID naming file, line, column and the text", "[dataset][errors]") {
  Failure f = import_failure("1,2,0\n3,abc,1\n", small(), "ds-bad-field");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:3: field 2: expected a finite decimal number, found 'abc'"));
  f = import_failure("1,2,0\n3,,1\n", small(), "ds-empty-field");
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:3: field 2: expected a finite decimal number, found ''"));
  f = import_failure("1,nan,0\n", small(), "ds-nan");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("found 'nan'"));
}

TEST_CASE("A row with the wrong number of fields is refused with the expected and actual count", "[dataset][errors]") {
  Failure f = import_failure("1,2,0\n3,4,5,1\n", small(), "ds-cols-more");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:7: expected 3 fields (as on line 1), found 4"));
  f = import_failure("1,2,0\n3,1\n", small(), "ds-cols-less");
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:4: expected 3 fields (as on line 1), found 2"));
  f = import_failure("1,2,0\n\n3,4,1\n", small(), "ds-blank");
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:1: line is empty"));
}

TEST_CASE("Labels out of range are refused for multiclass and binary", "[dataset][errors]") {
  ImportOptions o = small();
  o.num_classes = 3;
  Failure f = import_failure("1,0\n2,3\n", o, "ds-label-range");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:3: label: expected an integer in [0, 3), found 3"));
  f = import_failure("1,0\n2,-1\n", small(), "ds-label-neg");
  CHECK_THAT(f.what(), Catch::Contains("found -1"));
  f = import_failure("1,0\n2,1.5\n", small(), "ds-label-frac");
  CHECK_THAT(f.what(), Catch::Contains("label: expected an integer, found 1.5"));
  f = import_failure("1,0\n2,2\n", small(TaskType::Binary), "ds-label-binary");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:3: label: expected 0 or 1 (binary task), found 2"));
}

TEST_CASE("An empty sklearn header line is refused naming the file and line, not an escaped exception",
          "[dataset][errors][security]") {
  // Found by the dataset_csv fuzz target: the empty first line gave no
  // header row and an out_of_range escaped the importer.
  ImportOptions o = small();
  o.header = "sklearn";
  Failure f = import_failure("\n1 2 0\n3 4 1\n", o, "ds-sklearn-empty");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:1: sklearn header: the line is empty"));
}

TEST_CASE("A label beyond 2^24 classes is refused when the class count is inferred, not converted",
          "[dataset][errors][security]") {
  // Found by the dataset_csv fuzz target: the inferred class count was the
  // largest label converted to an integer, undefined for 8.1e48.
  Failure f = import_failure("1,0\n2,8.1e48\n", small(), "ds-label-huge");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:2:3: label: expected an integer in [0, 16777216 (2^24)), found"));
  f = import_failure("1,0\n2,16777216\n", small(), "ds-label-2p24");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  ImportOptions o = small();
  o.num_classes = (int64_t{1} << 24) + 1;
  f = import_failure("1,0\n2,1\n", o, "ds-classes-huge");
  CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
  CHECK_THAT(f.what(), Catch::Contains("expected 0 (infer) or 2 to 2^24"));
}

TEST_CASE("An sklearn header whose counts disagree with the file is refused", "[dataset][errors]") {
  ImportOptions o = small(TaskType::Binary);
  o.header = "sklearn";
  Failure f = import_failure("3,2,a,b\n1,2,0\n3,4,1\n", o, "ds-header");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("in.csv:1:1: the header declares 3 samples, the file has 2 data rows"));
}

TEST_CASE("A target file with another row count is refused naming both files", "[dataset][errors]") {
  const std::string dir = temp_dir("ds-target");
  write_text(dir + "/x.txt", "1 2\n3 4\n");
  write_text(dir + "/y.txt", "5\n");
  ImportOptions o = small(TaskType::Regression);
  o.features_file = dir + "/x.txt";
  o.target_file = dir + "/y.txt";
  o.root = dir + "/root";
  try {
    import_dataset(o);
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
    CHECK_THAT(f.what(), Catch::Contains("y.txt: 1 target rows, but") && Catch::Contains("x.txt has 2 data rows"));
  }
}

TEST_CASE("A missing raw file is NOT_FOUND, corrupt gzip is DATA_LOSS", "[dataset][errors]") {
  ImportOptions o = small();
  o.features_file = "/nonexistent/file.csv";
  o.root = temp_dir("ds-missing");
  try {
    import_dataset(o);
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_NOT_FOUND);
    CHECK_THAT(f.what(), Catch::Contains("/nonexistent/file.csv: data file does not exist"));
  }
  const std::string dir = temp_dir("ds-gz");
  write_text(dir + "/bad.csv.gz", std::string("\x1f\x8b\x08\x00garbage", 12));
  o.features_file = dir + "/bad.csv.gz";
  try {
    import_dataset(o);
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DATA_LOSS);
  }
}

TEST_CASE("verify detects a changed split file, a changed record and a renamed folder", "[dataset][errors]") {
  const std::string root = temp_dir("ds-tamper");
  const DatasetRecord r = import_dataset(cancer_options(root));
  // Copy to writable places we may damage (as root, permissions would not stop us anyway).
  auto copy = [&](const std::string& name) {
    const std::string dst = root + "/datasets/" + name;
    fs::create_directories(dst);
    for (const char* f : {"train.csv", "val.csv", "dataset.json"}) {
      fs::copy_file(r.dir + "/" + f, dst + "/" + f);
      fs::permissions(dst + "/" + f, fs::perms::owner_read | fs::perms::owner_write);
    }
    return dst;
  };
  const std::string name = fs::path(r.dir).filename().string();
  {
    const std::string d = copy("x/" + name);
    std::string t = read_text(d + "/val.csv");
    t[0] = t[0] == '1' ? '2' : '1';
    write_text(d + "/val.csv", t);
    try {
      verify_dataset(d);
      FAIL("accepted");
    } catch (const Failure& f) {
      CHECK(f.code() == UMLOS_DATA_HASH_MISMATCH);
      CHECK_THAT(f.what(),
                 Catch::Contains("val.csv: SHA-256") && Catch::Contains("differs from the one in dataset.json"));
    }
  }
  {
    const std::string d = copy("y/" + name);
    std::string t = read_text(d + "/dataset.json");
    t.insert(t.size() - 1, " ");
    write_text(d + "/dataset.json", t);
    try {
      verify_dataset(d);
      FAIL("accepted");
    } catch (const Failure& f) {
      CHECK(f.code() == UMLOS_DATA_HASH_MISMATCH);
      CHECK_THAT(f.what(), Catch::Contains("does not match its record"));
    }
  }
  {
    const std::string d = copy("breast_cancer-1-0000000000000000");
    CHECK_THROWS_WITH(verify_dataset(d), Catch::Contains("folder name 'breast_cancer-1-0000000000000000'"));
  }
  {
    const std::string d = copy("z/" + name);
    fs::remove(d + "/train.csv");
    try {
      verify_dataset(d);
      FAIL("accepted");
    } catch (const Failure& f) {
      CHECK(f.code() == UMLOS_NOT_FOUND);
      CHECK_THAT(f.what(), Catch::Contains("train.csv: split file does not exist"));
    }
  }
}

TEST_CASE("load_datasets finds the data set, verifies it and creates the values of docs/training.md",
          "[dataset][bootstrap]") {
  const std::string root = temp_dir("ds-load");
  const DatasetRecord r = import_dataset(digits_options(root));
  const std::string dir = temp_dir("ds-load-m");
  const std::string text = manifest_with(
      "  - {id: digits, version: \"1\", hash: " + to_hex(r.train.sha256) +
          ", split: train}\n  - {id: digits, version: \"1\", hash: " + to_hex(r.val.sha256) + ", split: val}\n",
      "  task_type: multiclass\n");
  write_text(dir + "/m.yaml", text);
  const Manifest m = load_manifest(dir + "/m.yaml");
  std::optional<Dataset> d = resolve_manifest_datasets(m, root);
  REQUIRE(d);
  CHECK(d->record.dir == r.dir);

  Host host;
  host.load(module_path("umlos_cpu_driver"), std::nullopt);
  host.activate_driver("cpu_driver");
  put_dataset_values(*d, host);
  auto shape = [&](const std::string& n) { return shape_string(host.values().at(n)->shape); };
  auto dtype = [&](const std::string& n) { return std::string(dtype_name(host.values().at(n)->dtype)); };
  CHECK(shape("data.train.x") == "[" + std::to_string(r.train.rows) + ",64]");
  CHECK(dtype("data.train.x") == "f64");
  CHECK(shape("data.train.y") == "[" + std::to_string(r.train.rows) + "]");
  CHECK(dtype("data.train.y") == "i64");
  CHECK(shape("data.val.x") == "[359,64]");
  CHECK(shape("data.norm.offset") == "[64]");
  CHECK(shape("data.norm.scale") == "[64]");
  CHECK(dtype("data.num_classes") == "i64");
  HostTensor c = host.to_host(*host.values().at("data.num_classes"));
  int64_t C = 0;
  std::memcpy(&C, c.data.data(), 8);
  CHECK(C == 10);
  CHECK(host.values().count("data.target.mean") == 0);
  CHECK_FALSE(host.is_persistent("data.train.x"));
}

TEST_CASE("Regression data sets also give data.target.mean and data.target.std", "[dataset][bootstrap]") {
  const std::string root = temp_dir("ds-load-reg");
  const DatasetRecord r = import_dataset(diabetes_options(root));
  Dataset d = verify_dataset(r.dir);
  Host host;
  host.load(module_path("umlos_cpu_driver"), std::nullopt);
  host.activate_driver("cpu_driver");
  put_dataset_values(d, host);
  HostTensor m = host.to_host(*host.values().at("data.target.mean"));
  double mean = 0;
  std::memcpy(&mean, m.data.data(), 8);
  CHECK(mean == r.target_mean);
  CHECK(dtype_name(host.values().at("data.train.y")->dtype) == std::string("f64"));
}

TEST_CASE("A manifest entry with a path imports the raw file on first use, with config.data options",
          "[dataset][bootstrap]") {
  const std::string root = temp_dir("ds-path-root");
  const DatasetRecord ref = import_dataset(diabetes_options(temp_dir("ds-path-ref")));
  const std::string dir = temp_dir("ds-path");
  fs::copy_file(vendored("diabetes_data_raw.csv.gz"), dir + "/diabetes_data_raw.csv.gz");
  fs::copy_file(vendored("diabetes_target.csv.gz"), dir + "/diabetes_target.csv.gz");
  const std::string text =
      manifest_with("  - {id: diabetes, version: \"1\", hash: " + to_hex(ref.train.sha256) +
                        ", split: train, path: diabetes_data_raw.csv.gz}\n",
                    "  task_type: regression\n  data: {target_path: diabetes_target.csv.gz, val_fraction: 0.2}\n");
  write_text(dir + "/m.yaml", text);
  const Manifest m = load_manifest(dir + "/m.yaml");
  std::optional<Dataset> d = resolve_manifest_datasets(m, root);
  REQUIRE(d);
  CHECK(fs::path(d->record.dir).filename() == fs::path(ref.dir).filename());
  CHECK(fs::path(d->record.dir).parent_path() == fs::path(root) / "datasets");
  // Second resolution finds it without importing.
  CHECK(resolve_manifest_datasets(m, root)->record.dir == d->record.dir);
}

TEST_CASE("Manifest data set errors: absent, pinned hash differs, task mismatch, unknown task",
          "[dataset][bootstrap][errors]") {
  const std::string root = temp_dir("ds-merr");
  const DatasetRecord r = import_dataset(cancer_options(root));
  const std::string dir = temp_dir("ds-merr-m");
  auto fails = [&](const std::string& datasets, const std::string& config) {
    write_text(dir + "/m.yaml", manifest_with(datasets, config));
    const Manifest m = load_manifest(dir + "/m.yaml");
    try {
      resolve_manifest_datasets(m, root);
    } catch (const Failure& f) {
      return f;
    }
    return Failure(UMLOS_OK, "");
  };
  const std::string zero(64, '0');
  Failure f =
      fails("  - {id: breast_cancer, version: \"1\", hash: " + zero + ", split: train}\n", "  task_type: binary\n");
  CHECK(f.code() == UMLOS_NOT_FOUND);
  CHECK_THAT(f.what(), Catch::Contains("m.yaml:") && Catch::Contains("is not under"));

  fs::copy_file(vendored("breast_cancer.csv"), dir + "/bc.csv", fs::copy_options::overwrite_existing);
  f = fails("  - {id: breast_cancer, version: \"1\", hash: " + zero + ", split: train, path: bc.csv}\n",
            "  task_type: binary\n  data: {header: sklearn}\n");
  CHECK(f.code() == UMLOS_DATA_HASH_MISMATCH);
  CHECK_THAT(f.what(), Catch::Contains("the manifest pins " + zero));

  const std::string ok =
      "  - {id: breast_cancer, version: \"1\", hash: " + to_hex(r.train.sha256) + ", split: train}\n";
  f = fails(ok, "  task_type: multiclass\n");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("key 'config.task_type' is multiclass but the data set"));

  f = fails(ok, "  task_type: ranking\n");
  CHECK(f.code() == UMLOS_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("expected multiclass, binary or regression, found 'ranking'"));

  f = fails(ok + "  - {id: breast_cancer, version: \"1\", hash: " + zero + ", split: val}\n", "  task_type: binary\n");
  CHECK(f.code() == UMLOS_DATA_HASH_MISMATCH);
  CHECK_THAT(f.what(), Catch::Contains("datasets[1].hash"));

  f = fails(ok + "  - {id: digits, version: \"1\", hash: " + zero + ", split: val}\n", "  task_type: binary\n");
  CHECK(f.code() == UMLOS_DATA_MANIFEST_INVALID);
  CHECK_THAT(f.what(), Catch::Contains("every entry must name the same data set"));
}

TEST_CASE("umlos dataset import prints the folder and the manifest lines, verify re-checks it", "[dataset][cli]") {
  const std::string root = temp_dir("ds-cli");
  CommandResult r = run_umlos("dataset import '" + vendored("digits.csv.gz") +
                              "' --id digits --version 1 --task multiclass --root '" + root + "'");
  REQUIRE(r.exit_status == 0);
  CHECK_THAT(r.output, Catch::Contains("task      multiclass, 64 features, 10 classes"));
  CHECK_THAT(r.output, Catch::Contains("datasets:\n  - id: digits\n    version: \"1\"\n    hash: "));
  CHECK_THAT(r.output, Catch::Contains("split: val"));
  const std::string dir = r.output.substr(10, r.output.find('\n') - 10);
  CommandResult v = run_umlos("dataset verify '" + dir + "'");
  CHECK(v.exit_status == 0);
  CHECK_THAT(v.output, Catch::Contains("1438 + 359 rows re-parsed"));
}

TEST_CASE("umlos dataset import exits with the code's status for bad data and 2 for bad usage",
          "[dataset][cli][errors]") {
  const std::string dir = temp_dir("ds-cli-err");
  write_text(dir + "/in.csv", "1,2,0\n3,4,7\n");
  CommandResult r =
      run_umlos("dataset import '" + dir + "/in.csv' --id t --version 1 --task binary --root '" + dir + "/root'");
  CHECK(r.exit_status == exit_code_for(UMLOS_DATA_MANIFEST_INVALID));
  CHECK(r.exit_status == 55);
  CHECK_THAT(r.output, Catch::Contains("umlos: DATA_MANIFEST_INVALID:") && Catch::Contains("in.csv:2:5: label"));
  r = run_umlos("dataset import '" + dir + "/in.csv' --id t --version 1 --task ranking --root '" + dir + "/root'");
  CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  r = run_umlos("dataset import '" + dir + "/in.csv' --id t --task binary");
  CHECK(r.exit_status == 2);
  r = run_umlos("dataset verify '" + dir + "/nothing'");
  CHECK(r.exit_status == exit_code_for(UMLOS_NOT_FOUND));
}

TEST_CASE("Re-importing over a placed folder whose files were altered is refused, not silently reused",
          "[dataset][errors]") {
  const std::string root = temp_dir("ds-reimport");
  const DatasetRecord r = import_dataset(cancer_options(root));
  const std::string val = r.dir + "/val.csv";
  fs::permissions(val, fs::perms::owner_read | fs::perms::owner_write);
  std::string t = read_text(val);
  t[t.size() - 2] = t[t.size() - 2] == '0' ? '1' : '0';  // flip the last label
  write_text(val, t);
  try {
    import_dataset(cancer_options(root));
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DATA_HASH_MISMATCH);
    CHECK_THAT(f.what(), Catch::Contains("val.csv: SHA-256"));
  }
}

TEST_CASE("umlos dataset verify exits 56 for a damaged split file, list names the placed folders",
          "[dataset][cli][errors]") {
  const std::string root = temp_dir("ds-cli-verify");
  const DatasetRecord r = import_dataset(cancer_options(root));
  CommandResult l = run_umlos("dataset list --root '" + root + "'");
  CHECK(l.exit_status == 0);
  CHECK(l.output == r.dir + "\n");
  const std::string train = r.dir + "/train.csv";
  fs::permissions(train, fs::perms::owner_read | fs::perms::owner_write);
  write_text(train, read_text(train) + "1,2\n");
  CommandResult v = run_umlos("dataset verify '" + r.dir + "'");
  CHECK(v.exit_status == exit_code_for(UMLOS_DATA_HASH_MISMATCH));
  CHECK(v.exit_status == 56);
  CHECK_THAT(v.output, Catch::Contains("umlos: DATA_HASH_MISMATCH:") && Catch::Contains("train.csv: SHA-256"));
}
