// `umlos export RUN_DIR -o FILE`: a run's parameters as safetensors, read
// back by an independent reader (tests/tools/read_safetensors.py, Python 3
// standard library only) and compared with the checkpoint's values.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "run_support.hpp"
#include "sha256.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* kSafetensorsDtype[] = {"", "F32", "F64", "I32", "I64", "U8", "U32", "U64"};

std::string hex(const std::vector<uint8_t>& b) { return umlos::to_hex(b.data(), b.size()); }

// What the reader must find: the checkpoint's values named by `keep`, and
// the provenance metadata.
std::string expectation(const CheckpointData& ck, bool (*keep)(const std::string&), const std::string& job_id,
                        const std::string& dir) {
  json tensors = json::object();
  for (const CheckpointValue& v : ck.values) {
    if (!keep(v.name)) continue;
    json shape = json::array();
    for (uint32_t i = 0; i < v.tensor.shape.rank; ++i) shape.push_back(v.tensor.shape.dims[i]);
    tensors[v.name] = {{"dtype", kSafetensorsDtype[v.tensor.dtype]}, {"shape", shape}, {"hex", hex(v.tensor.data)}};
  }
  json meta = {{"manifest_hash", to_hex(ck.manifest_hash)},
               {"t", std::to_string(ck.t)},
               {"state_fp", to_hex(*ck.state_fp)},
               {"job_id", job_id}};
  const std::string file = dir + "/expected.json";
  write_text(file, json{{"tensors", tensors}, {"metadata", meta}}.dump());
  return file;
}

CommandResult python_reader(const std::string& file, const std::string& expected) {
  const std::string cmd = "python3 '" + std::string(UMLOS_SOURCE_DIR) + "/tests/tools/read_safetensors.py' '" + file +
                          "' '" + expected + "' 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool parameters_only(const std::string& n) { return n.rfind("theta.", 0) == 0 || n.rfind("model.param.", 0) == 0; }
bool every_value(const std::string&) { return true; }

}  // namespace

TEST_CASE(
    "umlos export writes a run's parameters as safetensors that an independent reader parses to the "
    "checkpoint's values",
    "[checkpoint][export]") {
  REQUIRE(std::system("python3 -c 'import json, struct' >/dev/null 2>&1") == 0);  // the reader needs Python 3
  const std::string m = variant("breast_cancer", "export",
                                {{"max_steps: 600", "max_steps: 4"}, {"checkpoint_every: 250", "checkpoint_every: 2"}});
  Run r = run_ok(m, "export");
  const std::string job_id = records(r.trace()).front()["job_id"].get<std::string>();
  const std::string out_dir = temp_dir("export-out");

  SECTION("the latest checkpoint, parameters only") {
    const std::string out = out_dir + "/params.safetensors";
    CommandResult e = run_umlos("export '" + r.dir + "' -o '" + out + "'");
    INFO(e.output);
    REQUIRE(e.exit_status == 0);
    const CheckpointData ck = read_checkpoint(latest_checkpoint(r.dir));
    CHECK(ck.t == 4);
    CommandResult py = python_reader(out, expectation(ck, parameters_only, job_id, out_dir));
    INFO(py.output);
    CHECK(py.exit_status == 0);
    CHECK(py.output.rfind("ok: 14 tensors", 0) == 0);
    // The header length is a multiple of 8 and the file is nothing else.
    const std::vector<uint8_t> bytes = read_file(out);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    CHECK(n % 8 == 0);
    CHECK(std::distance(fs::directory_iterator(out_dir), fs::directory_iterator()) == 2);  // + expected.json
  }
  SECTION("an older checkpoint, every value") {
    const std::string out = out_dir + "/all.safetensors";
    CommandResult e = run_umlos("export '" + r.dir + "' -o '" + out + "' --checkpoint ckpt_00000002.pb --all");
    INFO(e.output);
    REQUIRE(e.exit_status == 0);
    const CheckpointData ck = read_checkpoint(r.dir + "/checkpoints/ckpt_00000002.pb");
    CommandResult py = python_reader(out, expectation(ck, every_value, job_id, out_dir));
    INFO(py.output);
    CHECK(py.exit_status == 0);
  }
  SECTION("the reader notices a changed byte (it can fail)") {
    const std::string out = out_dir + "/params.safetensors";
    REQUIRE(run_umlos("export '" + r.dir + "' -o '" + out + "'").exit_status == 0);
    std::vector<uint8_t> bytes = read_file(out);
    bytes.back() ^= 1;
    write_file_atomic(out, bytes);
    const CheckpointData ck = read_checkpoint(latest_checkpoint(r.dir));
    CommandResult py = python_reader(out, expectation(ck, parameters_only, job_id, out_dir));
    INFO(py.output);
    CHECK(py.exit_status == 1);
  }
  SECTION("an output path that is a symbolic link is refused and its target left alone") {
    const std::string victim = out_dir + "/victim.txt", link = out_dir + "/link.safetensors";
    write_text(victim, "precious");
    fs::create_symlink(victim, link);
    CommandResult e = run_umlos("export '" + r.dir + "' -o '" + link + "'");
    INFO(e.output);
    CHECK(e.exit_status == exit_code_for(UMLOS_FAILED_PRECONDITION));
    CHECK(e.output.find("symbolic link") != std::string::npos);
    CHECK(read_text(victim) == "precious");
    CHECK(fs::is_symlink(link));
  }
  SECTION("a run folder without checkpoints and a corrupt checkpoint are refused with their codes") {
    CommandResult none = run_umlos("export '" + out_dir + "' -o '" + out_dir + "/x.safetensors'");
    CHECK(none.exit_status == exit_code_for(UMLOS_NOT_FOUND));
    std::vector<uint8_t> bytes = read_file(latest_checkpoint(r.dir));
    bytes[bytes.size() / 3] ^= 0x10;
    write_file_atomic(latest_checkpoint(r.dir), bytes);
    CommandResult bad = run_umlos("export '" + r.dir + "' -o '" + out_dir + "/y.safetensors'");
    INFO(bad.output);
    CHECK(bad.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(!fs::exists(out_dir + "/y.safetensors"));
  }
  SECTION("--help") {
    CommandResult h = run_umlos("export --help");
    CHECK(h.exit_status == 0);
    CHECK(h.output.find("safetensors") != std::string::npos);
  }
}
