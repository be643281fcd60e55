// export_cmd.cpp — checkpoint values to a safetensors file.
// The format (https://github.com/huggingface/safetensors, "Format"):
//   8 bytes   N, unsigned little-endian
//   N bytes   a UTF-8 JSON object: per tensor {"dtype", "shape",
//             "data_offsets": [begin, end]} (offsets relative to the byte
//             buffer), and an optional "__metadata__" of string to string
//   rest      the byte buffer: every tensor row-major little-endian, with no
//             gap and no overlap
#include "export_cmd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_parse.hpp"
#include "error.hpp"
#include "sha256.hpp"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* safetensors_dtype(int32_t dtype) {
  switch (dtype) {
    case UMLOS_DTYPE_F32:
      return "F32";
    case UMLOS_DTYPE_F64:
      return "F64";
    case UMLOS_DTYPE_I32:
      return "I32";
    case UMLOS_DTYPE_I64:
      return "I64";
    case UMLOS_DTYPE_U8:
      return "U8";
    case UMLOS_DTYPE_U32:
      return "U32";
    case UMLOS_DTYPE_U64:
      return "U64";
    default:
      return nullptr;
  }
}

bool is_parameter(const std::string& name) {
  return name.rfind("theta.", 0) == 0 || name.rfind("model.param.", 0) == 0;
}

// The run header's job_id, from the first line of RUN_DIR/trace.jsonl (read
// at most 1 MiB of it); "" when there is none.
std::string job_id_of(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / "trace.jsonl", std::ios::binary);
  if (!in) return "";
  std::string line;
  char c;
  while (line.size() < (1u << 20) && in.get(c) && c != '\n') line.push_back(c);
  try {
    const json header = json::parse(line);
    if (header.is_object() && header.value("record", "") == "run_header" && header.contains("job_id") &&
        header["job_id"].is_string()) {
      return header["job_id"].get<std::string>();
    }
  } catch (const json::exception&) {
  }
  return "";
}

[[noreturn]] void fail_write(const std::string& what, const std::string& path, int err) {
  throw Failure(err == EACCES || err == EPERM    ? UMLOS_PERMISSION_DENIED
                : err == ENOSPC || err == EDQUOT ? UMLOS_RESOURCE_EXHAUSTED
                                                 : UMLOS_IO_ERROR,
                what + " '" + path + "': " + std::strerror(err));
}

// A new temporary file beside `path` (mkstemp: O_CREAT | O_EXCL, never a
// file or link someone planted), fsync, rename over `path`, fsync of the
// folder.
void write_new_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (folder / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) fail_write("cannot create a temporary file beside", path, errno);
  const std::string tmp(buf.data());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail_write("cannot write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail_write("cannot flush", tmp, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_write("cannot rename '" + tmp + "' to", path, err);
  }
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail_write("cannot open folder", folder.string(), errno);
  const int rc = ::fsync(dir);
  const int err = errno;
  ::close(dir);
  if (rc != 0) fail_write("cannot fsync folder", folder.string(), err);
}

}  // namespace

std::vector<uint8_t> safetensors_bytes(const CheckpointData& ck, const std::vector<std::string>& names,
                                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::vector<const CheckpointValue*> chosen;
  uint64_t offset = 0;
  for (const std::string& name : names) {
    const CheckpointValue* v = nullptr;
    for (const CheckpointValue& c : ck.values) {
      if (c.name == name) v = &c;
    }
    if (!v) throw Failure(UMLOS_NOT_FOUND, "checkpoint '" + ck.file + "' holds no value '" + name + "'");
    if (name == "__metadata__") {
      throw Failure(UMLOS_INVALID_ARGUMENT,
                    "checkpoint '" + ck.file + "': a value named '__metadata__' cannot be a safetensors tensor");
    }
    const char* dt = safetensors_dtype(v->tensor.dtype);
    if (!dt) {
      throw Failure(UMLOS_INVALID_ARGUMENT, "checkpoint '" + ck.file + "': value '" + name + "' has dtype " +
                                                std::to_string(v->tensor.dtype) + ", which safetensors cannot hold");
    }
    json shape = json::array();
    for (uint32_t i = 0; i < v->tensor.shape.rank; ++i) shape.push_back(v->tensor.shape.dims[i]);
    const uint64_t end = offset + v->tensor.data.size();
    header[name] = {{"dtype", dt}, {"shape", shape}, {"data_offsets", {offset, end}}};
    offset = end;
    chosen.push_back(v);
  }
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [k, val] : metadata) meta[k] = val;
    header["__metadata__"] = meta;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');  // the buffer starts 8-byte aligned
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const CheckpointValue* v : chosen) out.insert(out.end(), v->tensor.data.begin(), v->tensor.data.end());
  return out;
}

ExportResult export_safetensors(const ExportOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(options.run_dir, ec)) {
    throw Failure(UMLOS_NOT_FOUND, "run folder '" + options.run_dir + "' does not exist");
  }
  std::string file = options.checkpoint;
  if (file.empty()) {
    file = latest_checkpoint(options.run_dir);
  } else if (file.find('/') == std::string::npos && !fs::exists(file, ec)) {
    file = (fs::path(options.run_dir) / "checkpoints" / file).string();  // a name in RUN_DIR/checkpoints
  }
  struct stat st {};
  if (::lstat(options.output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw Failure(UMLOS_FAILED_PRECONDITION,
                  "output '" + options.output + "' is " +
                      (S_ISLNK(st.st_mode) ? "a symbolic link (refusing to write through it)" : "not a regular file"));
  }
  const CheckpointData ck = read_checkpoint(file);
  std::vector<std::string> names;
  for (const CheckpointValue& v : ck.values) {
    if (options.all_values || is_parameter(v.name)) names.push_back(v.name);
  }
  if (names.empty()) {
    throw Failure(
        UMLOS_NOT_FOUND,
        "checkpoint '" + file + "' holds no parameters (values theta.* or model.param.*); --all exports every value");
  }
  std::map<std::string, std::string> meta = {
      {"format", "umlos"},
      {"checkpoint", fs::path(file).filename().string()},
      {"manifest_hash", to_hex(ck.manifest_hash)},
      {"replay_token", to_hex(ck.replay_token)},
      {"spec_version", ck.spec_version},
      {"t", std::to_string(ck.t)},
  };
  if (ck.state_fp) meta["state_fp"] = to_hex(*ck.state_fp);
  if (ck.functional_fp) meta["functional_fp"] = to_hex(*ck.functional_fp);
  const std::string job = job_id_of(options.run_dir);
  if (!job.empty()) meta["job_id"] = job;
  const std::vector<uint8_t> bytes = safetensors_bytes(ck, names, meta);
  write_new_file_atomic(options.output, bytes);
  return {file, ck.t, names.size(), bytes.size()};
}

int cmd_export(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  const char* usage = "umlos export RUN_DIR -o FILE [--checkpoint FILE] [--all]";
  po::options_description desc("umlos export options");
  ExportOptions o;
  desc.add_options()("run-dir", po::value<std::string>(&o.run_dir)->required(), "the run folder")(
      "output,o", po::value<std::string>(&o.output)->required(), "the .safetensors file to write (atomically)")(
      "checkpoint", po::value<std::string>(&o.checkpoint),
      "the checkpoint to export: a file, or a name in RUN_DIR/checkpoints (default: the one 'latest' names)")(
      "all", po::bool_switch(&o.all_values),
      "every persistent value of the checkpoint (optimiser state, latent buffer, ...), not only the parameters");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  po::variables_map vm;
  if (!parse_command_line(args, desc, pos, vm, [&](const po::options_description& d) {
        std::cout
            << "usage: " << usage << "\n\n"
            << "Writes the trained parameters (values theta.* and model.param.*) of a run's checkpoint in the\n"
               "safetensors format: 8-byte little-endian header length, JSON header (dtype, shape, data_offsets\n"
               "per tensor; __metadata__ with manifest_hash, t, state_fp, job_id), raw little-endian tensors.\n"
               "Readable with the safetensors library (NumPy, PyTorch, JAX) without UML_OS. docs/checkpoint.md.\n\n"
            << d;
      }))
    return 0;
  const ExportResult r = export_safetensors(o);
  std::printf("%s: %zu tensors from %s (t=%lld), %llu bytes\n", o.output.c_str(), r.tensors, r.checkpoint.c_str(),
              static_cast<long long>(r.t), static_cast<unsigned long long>(r.bytes));
  return 0;
}

}  // namespace umlos
