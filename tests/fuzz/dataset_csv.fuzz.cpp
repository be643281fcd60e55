// `umlos dataset import` and manifest `datasets:` entries (docs/data.md):
// the first byte picks the options (task, header, delimiter, label column,
// gzip or not), the rest is the features file. A data set that imports is
// verified again from its folder (strict re-parse, statistics bit for bit),
// then removed.
#include <filesystem>
#include <string>

#include "dataset.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t o = data[0];
  umlos::ImportOptions opt;
  opt.id = "fuzz";
  opt.version = "1";
  static const umlos::TaskType kTasks[] = {umlos::TaskType::Multiclass, umlos::TaskType::Binary,
                                           umlos::TaskType::Regression, umlos::TaskType::Multiclass};
  opt.task = kTasks[o & 3];
  static const char* const kHeaders[] = {"none", "line", "sklearn", "none"};
  opt.header = kHeaders[(o >> 2) & 3];
  static const char* const kDelims[] = {"auto", "comma", "space", "auto"};
  opt.delimiter = kDelims[(o >> 4) & 3];
  opt.label_column = (o & 0x40) ? "first" : "last";
  const bool gz = o & 0x80;
  opt.root = umlos_fuzz::scratch() + "/root";
  opt.features_file = umlos_fuzz::put(gz ? "features.csv.gz" : "features.csv", data + 1, size - 1);
  umlos_fuzz::guarded([&] {
    const umlos::DatasetRecord r = umlos::import_dataset(opt);
    (void)umlos::verify_dataset(r.dir);
  });
  std::error_code ec;
  std::filesystem::remove_all(opt.root, ec);
  return 0;
}
