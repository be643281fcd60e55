// dataset_cmd.cpp — `umlos dataset import|verify|list` (docs/data.md).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_parse.hpp"
#include "dataset.hpp"
#include "dataset_cmd.hpp"
#include "error.hpp"
#include "procedure.hpp"

namespace umlos {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* kUsage =
    "usage: umlos dataset import FILE --id ID --version V --task multiclass|binary|regression\n"
    "                            [--label-column last|first|N] [--target FILE] [--header none|line|sklearn]\n"
    "                            [--delimiter auto|comma|space] [--val-fraction F] [--num-classes C] [--root DIR]\n"
    "       umlos dataset verify DIR\n"
    "       umlos dataset list [--root DIR]\n";

bool parse_args(const std::vector<std::string>& args, po::options_description& desc,
                const po::positional_options_description& pos, po::variables_map& vm) {
  return parse_command_line(args, desc, pos, vm, [](const po::options_description& d) {
    std::cout << kUsage << "\n" << d << "\n";
  });
}

void print_summary(const DatasetRecord& r) {
  std::printf("dataset   %s\n", r.dir.c_str());
  std::printf("task      %s, %lld features, %lld classes\n", task_name(r.task), static_cast<long long>(r.num_features),
              static_cast<long long>(r.num_classes));
  for (const SplitInfo* s : {&r.train, &r.val}) {
    std::printf("%-9s %-9s %6llu rows  sha256 %s\n", s == &r.train ? "train" : "val", s->file.c_str(),
                static_cast<unsigned long long>(s->rows), to_hex(s->sha256).c_str());
  }
  if (r.task == TaskType::Regression) std::printf("target    mean %.17g  std %.17g\n", r.target_mean, r.target_std);
}

void print_entries(const DatasetRecord& r) {
  std::printf("\n# manifest entries (paste under the manifest's top level):\ndatasets:\n");
  for (const SplitInfo* s : {&r.train, &r.val}) {
    std::printf("  - id: %s\n    version: \"%s\"\n    hash: %s\n    split: %s\n", r.id.c_str(), r.version.c_str(),
                to_hex(s->sha256).c_str(), s == &r.train ? "train" : "val");
  }
}

int cmd_import(const std::vector<std::string>& args) {
  po::options_description desc("umlos dataset import options");
  ImportOptions o;
  std::string task;
  desc.add_options()("file", po::value<std::string>(&o.features_file)->required(), "raw CSV file (.gz accepted)")(
      "id", po::value<std::string>(&o.id)->required(), "data set id ([A-Za-z0-9_.]+)")(
      "version", po::value<std::string>(&o.version)->required(), "data set version ([A-Za-z0-9_.]+)")(
      "task", po::value<std::string>(&task)->required(), "multiclass | binary | regression")(
      "label-column", po::value<std::string>(&o.label_column), "last (default) | first | 0-based column")(
      "target", po::value<std::string>(&o.target_file), "targets in their own file, one value a line")(
      "header", po::value<std::string>(&o.header), "none (default) | line | sklearn")(
      "delimiter", po::value<std::string>(&o.delimiter), "auto (default) | comma | space")(
      "val-fraction", po::value<double>(&o.val_fraction), "share of rows in the val split (0.2)")(
      "num-classes", po::value<int64_t>(&o.num_classes), "multiclass: C (default: max label + 1)")(
      "root", po::value<std::string>(&o.root), "UML_OS_ROOT (default: $UML_OS_ROOT or ./umlos_root)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_args(args, desc, pos, vm)) return 0;
  auto t = parse_task(task);
  if (!t)
    throw Failure(UMLOS_INVALID_ARGUMENT, "--task: expected multiclass, binary or regression, found '" + task + "'");
  o.task = *t;
  const DatasetRecord r = import_dataset(o);
  print_summary(r);
  print_entries(r);
  return 0;
}

int cmd_verify(const std::vector<std::string>& args) {
  po::options_description desc("umlos dataset verify options");
  std::string dir;
  desc.add_options()("dir", po::value<std::string>(&dir)->required(), "data set folder");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse_args(args, desc, pos, vm)) return 0;
  const Dataset d = verify_dataset(dir);
  print_summary(d.record);
  std::printf("verified  record, folder name, split hashes, %llu + %llu rows re-parsed, statistics recomputed\n",
              static_cast<unsigned long long>(d.train.rows), static_cast<unsigned long long>(d.val.rows));
  return 0;
}

int cmd_list(const std::vector<std::string>& args) {
  po::options_description desc("umlos dataset list options");
  std::string root;
  desc.add_options()("root", po::value<std::string>(&root), "UML_OS_ROOT");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, desc, pos, vm)) return 0;
  const fs::path datasets = fs::path(root.empty() ? umlos_root() : root) / "datasets";
  std::vector<std::string> names;
  std::error_code ec;
  if (fs::is_directory(datasets, ec))
    for (const auto& de : fs::directory_iterator(datasets, ec))
      if (de.is_directory() && de.path().filename().string()[0] != '.') names.push_back(de.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) std::printf("%s\n", (datasets / n).string().c_str());
  return 0;
}

}  // namespace

int cmd_dataset(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, stdout);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "import") return cmd_import(rest);
  if (args[0] == "verify") return cmd_verify(rest);
  if (args[0] == "list") return cmd_list(rest);
  std::fprintf(stderr, "umlos dataset: unknown subcommand '%s' (import, verify, list)\n", args[0].c_str());
  return 2;
}

}  // namespace umlos
