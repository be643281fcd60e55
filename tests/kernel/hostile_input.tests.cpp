// Hostile inputs to the `umlos` readers and parsers, as an attacker would
// hand them over: FIFOs, devices, huge and sparse files, gzip bombs, YAML
// alias bombs, scalars long enough to overflow a backtracking regex, JSON of
// the wrong types, unimplemented multi-process settings, a symlinked
// namespaces folder, unreadable files, a huge tensor. Each case runs the real
// `umlos` binary (a crash or a hang kills the child, not the tests) under a
// timeout and a memory limit, and checks the named code and exit status.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "../skip.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "manifest.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace umlos_test;
using umlos::exit_code_for;

namespace {

// Every case runs with a time limit (a hang fails as exit 124) and an address
// space limit (unbounded growth fails as an allocation failure, not by
// taking the machine's memory).
// Under AddressSanitizer an address-space limit makes the shadow memory
// reservation fail at start-up, so the sanitizer's own allocation cap
// stands in for it there.
#ifdef UMLOS_TEST_ASAN
const char* kLimits =
    "export ASAN_OPTIONS=max_allocation_size_mb=3000:allocator_may_return_null=1:${ASAN_OPTIONS}; timeout 60";
#else
const char* kLimits = "ulimit -v 3000000; timeout 60";
#endif

const std::string kDigest = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// A manifest that `umlos manifest hash` accepts (the module need not exist).
std::string manifest_with(const std::string& extra, const std::string& op = "UML_OS.Demo.RandomWalkStep_v1") {
  return "umlos_manifest: 1\nname: hostile\nmodules:\n  - {path: core.so, sha256: " + kDigest +
         "}\ndriver: {name: cpu_driver}\noperators:\n  next_batch_op: " + op + "\n" + extra;
}

CommandResult hash_manifest_text(const std::string& dir, const std::string& text) {
  const std::string file = dir + "/m.yaml";
  write_text(file, text);
  return run_umlos_env(kLimits, "manifest hash '" + file + "'");
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A sparse file of `size` zero bytes (no disk space used).
void sparse_file(const std::string& path, off_t size) {
  write_text(path, "");
  REQUIRE(::truncate(path.c_str(), size) == 0);
}

// A gzip stream that decompresses to `size` zero bytes.
std::vector<uint8_t> gzip_of_zeros(uint64_t size) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_RLE) == Z_OK);
  std::vector<uint8_t> zeros(1 << 20, 0), out, buf(1 << 16);
  uint64_t left = size;
  int flush = Z_NO_FLUSH;
  do {
    const uint64_t n = std::min<uint64_t>(left, zeros.size());
    left -= n;
    flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    zs.next_in = zeros.data();
    zs.avail_in = static_cast<uInt>(n);
    do {
      zs.next_out = buf.data();
      zs.avail_out = static_cast<uInt>(buf.size());
      deflate(&zs, flush);
      out.insert(out.end(), buf.data(), buf.data() + (buf.size() - zs.avail_out));
    } while (zs.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&zs);
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(b.data(), 1, b.size(), f) == b.size());
  std::fclose(f);
}

}  // namespace

// ------------------------------------------------------------ file readers

TEST_CASE("A FIFO given as any input file is refused at once instead of hanging", "[fsutil][security]") {
  const std::string dir = temp_dir("fifo");
  const std::string fifo = dir + "/in.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& args :
       {"manifest hash '" + fifo + "'", "run '" + fifo + "'", "plan '" + fifo + "'", "exec '" + fifo + "'",
        "exec '" + std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml' --inputs '" + fifo + "'"}) {
    INFO(args);
    const CommandResult r = run_umlos_env("timeout 20", args);
    CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));  // before: 124 (timeout)
    CHECK_THAT(r.output, Catch::Contains("in.fifo' is a FIFO (named pipe), expected a regular file"));
  }
}

TEST_CASE("/dev/zero as a manifest, plan, IR or inputs file is refused, not read without end", "[fsutil][security]") {
  const std::vector<std::string> commands = {
      "manifest hash /dev/zero", "plan /dev/zero", "exec /dev/zero",
      "exec '" + std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml' --inputs /dev/zero"};
  for (const std::string& args : commands) {
    INFO(args);
    const CommandResult r = run_umlos_env(kLimits, args);
    CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));  // before: INTERNAL (bad_alloc)
    CHECK_THAT(r.output, Catch::Contains("'/dev/zero' is a character device"));
  }
}

TEST_CASE("A file above its reader's limit is refused before it is read, naming the limit and the size",
          "[fsutil][security]") {
  const std::string dir = temp_dir("huge");
  const std::string plan = dir + "/huge.json";
  sparse_file(plan, static_cast<off_t>(umlos::kDefaultReadLimit) + 1);
  CommandResult r = run_umlos_env(kLimits, "plan '" + plan + "'");
  CHECK(r.exit_status == exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  CHECK_THAT(r.output, Catch::Contains("huge.json' is 1073741825 bytes, above the reader's limit of 1073741824"));

  const std::string manifest = dir + "/huge.yaml";
  sparse_file(manifest, static_cast<off_t>(umlos::kManifestReadLimit) + 1);
  r = run_umlos_env(kLimits, "manifest hash '" + manifest + "'");
  CHECK(r.exit_status == exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  CHECK_THAT(r.output, Catch::Contains("above the reader's limit of 16777216 bytes"));
  fs::remove_all(dir);
}

TEST_CASE("The readers' limits hold for a file as it is read, and a gzip stream is cut off at its limit",
          "[fsutil][security]") {
  const std::string dir = temp_dir("limits");
  write_text(dir + "/f", std::string(101, 'x'));
  CHECK(umlos::read_file(dir + "/f", 101).size() == 101);
  try {
    umlos::read_file(dir + "/f", 100);
    FAIL("a file above the limit was read");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_RESOURCE_EXHAUSTED);
    CHECK_THAT(std::string(f.what()), Catch::Contains("is 101 bytes, above the reader's limit of 100 bytes"));
  }
  const std::vector<uint8_t> bomb = gzip_of_zeros(4 << 20);
  CHECK(umlos::gunzip(bomb, "b.gz", 4 << 20).size() == (4u << 20));
  try {
    umlos::gunzip(bomb, "b.gz", 1 << 20);
    FAIL("a gzip stream above the limit was decompressed");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_RESOURCE_EXHAUSTED);
    CHECK_THAT(std::string(f.what()), Catch::Contains("'b.gz' decompresses to more than 1048576 bytes"));
  }
}

TEST_CASE("A gzip bomb as a plan input or a data set is stopped at the decompression limit", "[fsutil][security]") {
  const std::string dir = temp_dir("gzbomb");
  const std::vector<uint8_t> bomb = gzip_of_zeros(umlos::kDefaultGunzipLimit + (1 << 20));
  REQUIRE(bomb.size() < (8u << 20));
  write_bytes(dir + "/bomb.json.gz", bomb);
  write_bytes(dir + "/bomb.csv.gz", bomb);
  CommandResult r = run_umlos_env(kLimits, "plan '" + dir + "/bomb.json.gz'");
  CHECK(r.exit_status == exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  CHECK_THAT(r.output, Catch::Contains("bomb.json.gz' decompresses to more than 1073741824 bytes"));
  r = run_umlos_env(std::string("UML_OS_ROOT='") + dir + "/root' " + kLimits,
                    "dataset import --id bomb --version 1 --task multiclass '" + dir + "/bomb.csv.gz'");
  CHECK(r.exit_status == exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  CHECK_THAT(r.output, Catch::Contains("bomb.csv.gz' decompresses to more than 1073741824 bytes"));
  fs::remove_all(dir);
}

TEST_CASE("An unreadable input file exits PERMISSION_DENIED, not IO_ERROR", "[fsutil][security]") {
  const std::string dir = temp_dir("perm");
  ::chmod(dir.c_str(), 0755);
  const std::string file = dir + "/secret.yaml";
  write_text(file, manifest_with(""));
  REQUIRE(::chmod(file.c_str(), 0) == 0);
  // Root reads any file: run as nobody when we are root.
  const std::string as = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups" : "";
  const CommandResult r = run_umlos_env(as, "manifest hash '" + file + "'");
  CHECK(r.exit_status == exit_code_for(UMLOS_PERMISSION_DENIED));
  CHECK_THAT(r.output, Catch::Contains("PERMISSION_DENIED: cannot open '" + file + "'"));
}

// ------------------------------------------------------------ manifests

TEST_CASE("Plain YAML scalars of 40,000 characters are typed without overflowing the stack", "[manifest][security]") {
  const std::string dir = temp_dir("long-scalar");
  const std::string digits = repeat("1", 40000);
  // An integer: out of range (and said so), not a crash.
  CommandResult r = hash_manifest_text(dir, manifest_with("config: {n: " + digits + "}\n"));
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));  // before: SIGSEGV
  CHECK_THAT(r.output, Catch::Contains("key 'config.n': integer 1111"));
  // A float, an operator name and a namespace part: valid, so accepted.
  r = hash_manifest_text(dir, manifest_with("config: {x: 0." + digits + "}\n"));
  CHECK(r.exit_status == 0);
  r = hash_manifest_text(dir, manifest_with("", "UML_OS." + repeat("A", 40000) + "_v1"));
  CHECK(r.exit_status == 0);
  r = hash_manifest_text(dir, manifest_with("namespace: {org: " + repeat("a", 40000) + "}\n"));
  CHECK(r.exit_status == 0);
  r = hash_manifest_text(dir, manifest_with("", "UML_OS." + repeat("A", 40000) + "_vx"));
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));
}

TEST_CASE("The hand-written scalar scanners type what the YAML core schema says", "[manifest]") {
  auto typed = [](const std::string& scalar) {
    return umlos::parse_yaml_value("v: " + scalar + "\n", "t.yaml").find("v")->kind();
  };
  using K = umlos::cbor::Value::Kind;
  for (const char* s : {"0", "+7", "18446744073709551615", "0x1F"}) CHECK(typed(s) == K::UInt);
  CHECK(typed("-3") == K::NegInt);
  for (const char* s : {"1.5", "-.5", "+2.", "1e3", "1.5E-7", ".5e+2"}) CHECK(typed(s) == K::Float);
  for (const char* s : {"1e", "1.2.3", "0x", "0xG", "--1", "+", ".", "1_000", ".e5", "0X10"}) {
    INFO(s);
    CHECK(typed(s) == K::Text);
  }
  const std::string base = manifest_with("");
  for (const char* op : {"A.B_v1", "UML_OS.Model.Encode_v12", "a.b.c_d_v0"}) {
    INFO(op);
    CHECK_NOTHROW(umlos::parse_manifest(manifest_with("", op), "m.yaml", "."));
  }
  for (const char* op : {"A_v1", "A.B_v", "A._v1", "A.B_v1x", "A..B_v1", "1A.B_v1", "A.B-v1", "A.Bv1", ".A.B_v1"}) {
    INFO(op);
    CHECK_THROWS_AS(umlos::parse_manifest(manifest_with("", op), "m.yaml", "."), umlos::Failure);
  }
}

TEST_CASE("A YAML alias bomb in config is refused quickly naming the key", "[manifest][security]") {
  const std::string dir = temp_dir("laughs");
  std::string config = "config:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    config += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) config += ", " + prev;
    config += "]\n";
  }
  const CommandResult r = hash_manifest_text(dir, manifest_with(config));
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));  // before: killed (time, memory)
  CHECK_THAT(r.output, Catch::Contains("key 'config.a"));
  CHECK_THAT(r.output, Catch::Contains("more than 1000000 YAML nodes"));
}

TEST_CASE("Multi-process settings in a manifest are refused naming the key and the launch", "[manifest][security]") {
  const std::string dir = temp_dir("ranks");
  for (const std::string& extra :
       {std::string("config: {world_size: 2, rank: 1}\n"), std::string("config: {rank: 1}\n"),
        std::string("config: {distributed_mode: ring}\n"), std::string("config: {world_size: 1.0}\n")}) {
    INFO(extra);
    const CommandResult r = hash_manifest_text(dir, manifest_with(extra));
    CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));
    CHECK_THAT(r.output, Catch::Contains("m.yaml:8:"));
    CHECK_THAT(r.output, Catch::Contains("come from the launch (umlos run --nproc N"));
  }
  CommandResult r = hash_manifest_text(dir, manifest_with("config: {world_size: 2}\n"));
  CHECK_THAT(r.output, Catch::Contains("key 'config.world_size'"));
  r = hash_manifest_text(dir, "umlos_manifest: 1\nname: hostile\nmodules:\n  - {path: core.so, sha256: " + kDigest +
                                  "}\ndriver: {name: cpu_driver, config: {world_size: 4}}\noperators: {}\n");
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK_THAT(r.output, Catch::Contains("key 'driver.config.world_size'"));
  // What a single process does is still accepted.
  r = hash_manifest_text(dir, manifest_with("config: {world_size: 1, rank: 0, distributed_mode: none}\n"));
  CHECK(r.exit_status == 0);
}

TEST_CASE("A negative checkpoint interval is refused, in the manifest and on the command line",
          "[manifest][security]") {
  const std::string dir = temp_dir("ckpt-every");
  const CommandResult r = hash_manifest_text(dir, manifest_with("config: {checkpoint_every: -5}\n"));
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK_THAT(r.output, Catch::Contains("m.yaml:8:28: key 'config.checkpoint_every': expected an unsigned integer"));
  const std::string m = std::string(UMLOS_BINARY_DIR) + "/manifests/demo_walk.yaml";
  const CommandResult c = run_umlos("run -q --run-dir '" + dir + "/run' --checkpoint-every -5 '" + m + "'");
  CHECK(c.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK_THAT(c.output, Catch::Contains("--checkpoint-every: expected 0 (none) or a positive number"));
  CHECK_FALSE(fs::exists(dir + "/run/trace.jsonl"));
}

// ------------------------------------------------------------ runs

TEST_CASE("A UML_OS_ROOT/namespaces symlinked outside the root is refused", "[runner][security]") {
  const std::string dir = temp_dir("ns-link");
  fs::create_directories(dir + "/root");
  fs::create_directories(dir + "/elsewhere");
  fs::create_symlink(dir + "/elsewhere", dir + "/root/namespaces");
  const std::string m = std::string(UMLOS_BINARY_DIR) + "/manifests/demo_walk.yaml";
  const CommandResult r = run_umlos_env("UML_OS_ROOT='" + dir + "/root'", "run -q '" + m + "'");
  CHECK(r.exit_status == exit_code_for(UMLOS_NAMESPACE_VIOLATION));
  CHECK_THAT(r.output, Catch::Contains("outside UML_OS_ROOT"));
  CHECK(fs::is_empty(dir + "/elsewhere"));
}

TEST_CASE("A tensor over the run's memory budget fails before it is allocated", "[runner][security]") {
  const std::string dir = temp_dir("budget");
  const std::vector<std::string> mods = {module_path("umlos_cpu_driver"), module_path("umlos_core")};
  std::string text = walk_manifest(mods, kWalkOperators, 3);
  const std::string::size_type at = text.find("dim: 16");
  REQUIRE(at != std::string::npos);
  // The default budget (4 GiB): 2^31 doubles are 16 GiB.
  std::string huge = text;
  huge.replace(at, 7, "dim: 2147483648");
  write_text(dir + "/huge.yaml", huge);
  CommandResult r = run_umlos_env(kLimits, "run -q --run-dir '" + dir + "/run1' '" + dir + "/huge.yaml'");
  CHECK(r.exit_status == exit_code_for(UMLOS_QUOTA_EXCEEDED));  // before: INTERNAL after GBs
  CHECK_THAT(r.output, Catch::Contains("a tensor f64 [2147483648] of 17179869184 bytes"));
  CHECK_THAT(r.output, Catch::Contains("over budgets.memory_bytes = 4294967296 (the default"));
  // A budget in the manifest is the one checked.
  std::string small = text + "budgets: {memory_bytes: 100}\n";
  write_text(dir + "/small.yaml", small);
  r = run_umlos_env(kLimits, "run -q --run-dir '" + dir + "/run2' '" + dir + "/small.yaml'");
  CHECK(r.exit_status == exit_code_for(UMLOS_QUOTA_EXCEEDED));
  CHECK_THAT(r.output, Catch::Contains("of 128 bytes, with the"));
  CHECK_THAT(r.output, Catch::Contains("over budgets.memory_bytes = 100"));
  // And 16 doubles fit the default.
  write_text(dir + "/ok.yaml", text);
  r = run_umlos_env(kLimits, "run -q --run-dir '" + dir + "/run3' '" + dir + "/ok.yaml'");
  CHECK(r.exit_status == 0);
}

// ------------------------------------------------------------ JSON inputs

TEST_CASE("JSON inputs of the wrong type exit INVALID_ARGUMENT naming the file, not INTERNAL", "[exec][security]") {
  const std::string dir = temp_dir("json-types");
  const std::string ir = std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml";
  write_text(dir + "/inputs.json", R"({"x": {"dtype": 5, "values": [1]}})");
  CommandResult r = run_umlos("exec '" + ir + "' --inputs '" + dir + "/inputs.json'");
  CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));  // before: INTERNAL (19)
  CHECK_THAT(r.output, Catch::Contains(dir + "/inputs.json"));
  write_text(dir + "/shape.json", R"({"x": {"shape": "8x4", "values": [1]}})");
  r = run_umlos("exec '" + ir + "' --inputs '" + dir + "/shape.json'");
  CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK_THAT(r.output, Catch::Contains(dir + "/shape.json"));
}

TEST_CASE("A run folder whose trace holds a field of the wrong JSON type is still reported, never as an internal error",
          "[report][security]") {
  // The report reads every run-folder field by its expected type and skips
  // what is not (before: a JSON type_error escaped as INTERNAL, exit 19).
  const std::string dir = temp_dir("trace-types");
  write_text(dir + "/trace.jsonl", "{\"record\": 5, \"t\": 0}\n");
  const CommandResult r = run_umlos("report '" + dir + "' -o '" + dir + "/r.html'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK(fs::exists(dir + "/r.html"));
}
