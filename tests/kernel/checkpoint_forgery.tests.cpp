// Checkpoints as an attacker writes them: a checkpoint is a file, and its
// content hash says only that the file is intact, not that umlos wrote it.
// Forged values (with the hash recomputed) must be refused before any
// operator sees them; a corrupted latest checkpoint must point at the
// previous valid one; `umlos replay --verify` must check the checkpoints.
// Real runs of a shortened breast_cancer manifest through the `umlos` binary.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "replay.hpp"
#include "run_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// breast_cancer for 4 steps, a checkpoint every 2: ckpt_00000002.pb and
// ckpt_00000004.pb, with Adam moments for every parameter.
struct ShortRun {
  std::string root, dir;
  std::string ckpt(int64_t t) const {
    char name[32];
    std::snprintf(name, sizeof name, "/checkpoints/ckpt_%08lld.pb", static_cast<long long>(t));
    return dir + name;
  }
  std::string env() const { return "UML_OS_ROOT='" + root + "'"; }
};

ShortRun short_run(const std::string& tag) {
  const std::string m = variant("breast_cancer", "short",
                                {{"max_steps: 600", "max_steps: 4"}, {"checkpoint_every: 250", "checkpoint_every: 2"}});
  Run r = run_ok(m, tag);
  ShortRun s{fs::path(r.dir).parent_path().string(), r.dir};
  REQUIRE(fs::exists(s.ckpt(2)));
  REQUIRE(fs::exists(s.ckpt(4)));
  return s;
}

CheckpointValue& value(CheckpointData& d, const std::string& name) {
  for (CheckpointValue& v : d.values) {
    if (v.name == name) return v;
  }
  FAIL("the checkpoint holds no value '" << name << "'");
  throw;
}

void set_shape(HostTensor& t, const std::vector<int64_t>& dims, size_t bytes) {
  t.shape.rank = static_cast<uint32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) t.shape.dims[i] = dims[i];
  t.data.resize(bytes);
}

}  // namespace

TEST_CASE("A checkpoint whose extents multiply past 64 bits is refused by the decoder, not taken as empty",
          "[checkpoint][security]") {
  ShortRun s = short_run("ckpt-wrap");
  CheckpointData d = read_checkpoint(s.ckpt(4));
  // 2^62 * 2^62 * 16 elements of 8 bytes: 2^131 bytes, 0 modulo 2^128.
  set_shape(value(d, "opt.m.enc.W1").tensor, {int64_t{1} << 62, int64_t{1} << 62, 16}, 0);
  try {
    decode_checkpoint(encode_checkpoint_data(d), "forged.pb");
    FAIL("a wrapping shape was accepted");
  } catch (const Failure& f) {
    INFO(f.what());
    CHECK(f.code() == UMLOS_CHECKPOINT_INVALID);
    CHECK(std::string(f.what()).find("'forged.pb'") != std::string::npos);
    CHECK(std::string(f.what()).find("opt.m.enc.W1") != std::string::npos);
    CHECK(std::string(f.what()).find("f64[4611686018427387904,4611686018427387904,16]") != std::string::npos);
  }
}

TEST_CASE(
    "Resume refuses a forged checkpoint (content hash recomputed) whose Adam moment or parameter has another "
    "shape, naming the file, the value and both shapes, and changes nothing",
    "[checkpoint][security]") {
  ShortRun s = short_run("ckpt-forge");
  const std::string file = s.ckpt(4);
  const std::vector<uint8_t> original = read_file(file);
  const std::string trace_before = read_text(s.dir + "/trace.jsonl");
  const CheckpointData good = read_checkpoint(file);
  CheckpointData probe = good;
  const HostTensor w1 = value(probe, "theta.enc.W1").tensor;
  REQUIRE(w1.shape.rank == 2);
  const int64_t a = w1.shape.dims[0], b = w1.shape.dims[1];
  REQUIRE(a != b);
  const std::string expected = "f64[" + std::to_string(a) + "," + std::to_string(b) + "]";
  const size_t bytes = static_cast<size_t>(a * b * 8);

  struct Case {
    std::string name, value;
    std::vector<int64_t> dims;
    size_t bytes;
    std::string found;
  };
  const std::string ab = std::to_string(a) + "," + std::to_string(b);
  const std::vector<Case> cases = {
      {"zero", "opt.m.enc.W1", {0}, 0, "f64[0]"},
      {"short", "opt.v.enc.W1", {2}, 16, "f64[2]"},
      {"empty rows", "opt.m.enc.W1", {0, b}, 0, "f64[0," + std::to_string(b) + "]"},
      {"transposed", "opt.m.enc.W1", {b, a}, bytes, "f64[" + std::to_string(b) + "," + std::to_string(a) + "]"},
      {"padded rank", "opt.v.enc.W1", {1, a, b}, bytes, "f64[1," + ab + "]"},
      {"padded extent",
       "opt.m.enc.W1",
       {a + 1, b},
       bytes + 8 * static_cast<size_t>(b),
       "f64[" + std::to_string(a + 1) + "," + std::to_string(b) + "]"},
      {"wrapping",
       "opt.m.enc.W1",
       {int64_t{1} << 62, int64_t{1} << 62, 16},
       0,
       "f64[4611686018427387904,4611686018427387904,16]"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      CheckpointData d = good;
      set_shape(value(d, c.value).tensor, c.dims, c.bytes);
      write_file_atomic(file, encode_checkpoint_data(d));
      CommandResult r = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
      INFO(r.output);
      CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));  // not a signal (-1)
      CHECK(r.output.find("CHECKPOINT_INVALID: ") != std::string::npos);
      CHECK(r.output.find("checkpoint '" + file + "'") != std::string::npos);
      CHECK(r.output.find(c.value) != std::string::npos);
      CHECK(r.output.find(c.found) != std::string::npos);
      if (c.name != "wrapping") CHECK(r.output.find(expected) != std::string::npos);
      CHECK(read_text(s.dir + "/trace.jsonl") == trace_before);
    }
  }
  SECTION("a transposed parameter") {
    CheckpointData d = good;
    HostTensor& t = value(d, "theta.enc.W1").tensor;
    set_shape(t, {b, a}, t.data.size());
    write_file_atomic(file, encode_checkpoint_data(d));
    CommandResult r = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(r.output.find("checkpoint '" + file + "': value 'theta.enc.W1': expected") != std::string::npos);
    CHECK(r.output.find("value 'theta.enc.W1'") != std::string::npos);
    CHECK(r.output.find("[" + ab + "]") != std::string::npos);
    CHECK(r.output.find("[" + std::to_string(b) + "," + std::to_string(a) + "]") != std::string::npos);
  }
  SECTION("a scalar optimiser step made a vector") {
    CheckpointData d = good;
    set_shape(value(d, "opt.step").tensor, {0}, 0);
    write_file_atomic(file, encode_checkpoint_data(d));
    CommandResult r = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(r.output.find("value 'opt.step' is i64[0], expected i64[]") != std::string::npos);
  }
  // The untouched checkpoint still resumes (the checks refuse only forgeries).
  write_file_atomic(file, original);
  CommandResult ok = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
  INFO(ok.output);
  CHECK(ok.exit_status == 0);
}

TEST_CASE(
    "Resuming from a corrupted latest checkpoint names the previous valid one and the command that resumes "
    "from it, and that command continues the run to the same states",
    "[checkpoint][security][resume]") {
  ShortRun s = short_run("ckpt-prev");
  const std::vector<json> before = records(s.dir + "/trace.jsonl");
  const std::optional<Digest> final_state_fp = read_checkpoint(s.ckpt(4)).state_fp;
  REQUIRE(final_state_fp);
  std::vector<uint8_t> bytes = read_file(s.ckpt(4));
  bytes[bytes.size() / 2] ^= 0x40;
  write_file_atomic(s.ckpt(4), bytes);
  CommandResult r = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
  INFO(r.output);
  CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
  CHECK(r.output.find(s.ckpt(4)) != std::string::npos);
  const std::string command = "umlos run --resume '" + s.dir + "' --resume-from '" + s.ckpt(2) + "'";
  CHECK(r.output.find("the previous valid checkpoint is '" + s.ckpt(2) + "' (t=2)") != std::string::npos);
  CHECK(r.output.find(command) != std::string::npos);

  CommandResult again = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "' --resume-from '" + s.ckpt(2) + "'");
  INFO(again.output);
  REQUIRE(again.exit_status == 0);
  const std::vector<json> after = records(s.dir + "/trace.jsonl");
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].value("state_fp", json()) == before[i].value("state_fp", json()));
  }
  CHECK(read_checkpoint(s.ckpt(4)).state_fp == final_state_fp);

  SECTION("with no older valid checkpoint the message says so") {
    std::vector<uint8_t> b2 = read_file(s.ckpt(2));
    b2[10] ^= 1;
    write_file_atomic(s.ckpt(2), b2);
    write_file_atomic(s.ckpt(4), bytes);
    CommandResult none = run_umlos_env(s.env(), "run -q --resume '" + s.dir + "'");
    INFO(none.output);
    CHECK(none.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(none.output.find("no older valid checkpoint") != std::string::npos);
  }
}

TEST_CASE("umlos replay --verify refuses a run whose final checkpoint is corrupted or differs from the rerun's",
          "[checkpoint][replay][security]") {
  ShortRun s = short_run("ckpt-replay");
  CommandResult ok = run_umlos_env(s.env(), "replay --verify '" + s.dir + "'");
  INFO(ok.output);
  REQUIRE(ok.exit_status == 0);
  CHECK(ok.output.find("2 checkpoints") != std::string::npos);

  const std::vector<uint8_t> original = read_file(s.ckpt(4));
  SECTION("a flipped byte") {
    std::vector<uint8_t> bytes = original;
    bytes[bytes.size() - 40] ^= 0x01;
    write_file_atomic(s.ckpt(4), bytes);
    CommandResult r = run_umlos_env(s.env(), "replay --verify '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(r.output.find("identical") == std::string::npos);
    CHECK(r.output.find(s.ckpt(4)) != std::string::npos);
  }
  SECTION("truncated") {
    write_file_atomic(s.ckpt(4), std::vector<uint8_t>(original.begin(), original.begin() + 100));
    CommandResult r = run_umlos_env(s.env(), "replay --verify '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_CHECKPOINT_INVALID));
    CHECK(r.output.find("identical") == std::string::npos);
  }
  SECTION("intact but with other parameters (hash recomputed)") {
    CheckpointData d = read_checkpoint(s.ckpt(4));
    HostTensor& t = value(d, "theta.head.b2").tensor;
    REQUIRE(!t.data.empty());
    t.data[0] ^= 0x01;
    write_file_atomic(s.ckpt(4), encode_checkpoint_data(d));
    CommandResult r = run_umlos_env(s.env(), "replay --verify '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status == kReplayDiffersExit);
    CHECK(r.output.find("identical") == std::string::npos);
    CHECK(r.output.find("ckpt_00000004.pb") != std::string::npos);
    CHECK(r.output.find("theta.head.b2") != std::string::npos);
  }
  SECTION("the latest pointer names a checkpoint that is missing") {
    fs::remove(s.ckpt(4));
    CommandResult r = run_umlos_env(s.env(), "replay --verify '" + s.dir + "'");
    INFO(r.output);
    CHECK(r.exit_status != 0);
    CHECK(r.output.find("identical") == std::string::npos);
    CHECK(r.output.find("ckpt_00000004.pb") != std::string::npos);
  }
}

TEST_CASE("A checkpoint path that is a FIFO or a folder is refused without reading it", "[checkpoint][security]") {
  const std::string dir = temp_dir("ckpt-fifo");
  const std::string fifo = dir + "/ckpt_00000002.pb";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A blocking open of the FIFO would hang this test: the check comes first.
  try {
    read_checkpoint(fifo);
    FAIL("a FIFO was read as a checkpoint");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_CHECKPOINT_INVALID);
    CHECK(std::string(f.what()).find("expected a regular file, found a FIFO") != std::string::npos);
  }
  try {
    read_checkpoint(dir);
    FAIL("a folder was read as a checkpoint");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_CHECKPOINT_INVALID);
  }
}
