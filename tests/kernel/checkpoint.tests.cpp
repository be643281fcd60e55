// Checkpoints (spec 004 VIII) and the WriteTape_v1 tape: deterministic
// bytes, restore into a real Host, refusal of truncated, corrupt and foreign
// checkpoints, tape chain, resume and validation.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "checkpoint.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "tape.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kModules = {module_path("umlos_cpu_driver"), module_path("umlos_core")};

Manifest walk(uint64_t seed = 7) {
  return parse_manifest(walk_manifest(kModules, kWalkOperators, 30, 1, seed), "ckpt_test.yaml", "/tmp");
}

void load(Host& host, const Manifest& m) {
  for (const ModuleEntry& e : m.modules) host.load(e.resolved_path, e.sha256);
  host.activate_driver(m.driver_name);
}

// A run state as the spec 004 operators leave it: parameters, optimiser
// moments, loss history, latent ring, data cursor, state, sil_mean; plus one
// iteration-local value that must not be checkpointed.
void fill(Host& host, bool reverse_order) {
  std::vector<std::pair<std::string, HostTensor>> vals = {
      {"theta.w", host_tensor<double>(UMLOS_DTYPE_F64, {3, 2}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6})},
      {"theta.b", host_tensor<float>(UMLOS_DTYPE_F32, {2}, {1.5f, -2.25f})},
      {"opt.m.w", host_tensor<double>(UMLOS_DTYPE_F64, {3, 2}, {1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3})},
      {"opt.step", host_tensor<int64_t>(UMLOS_DTYPE_I64, {}, {42})},
      {"loss_hist", host_tensor<double>(UMLOS_DTYPE_F64, {2, 2}, {0.9, 0.0, 0.7, 1.0})},
      {"latent.z", host_tensor<double>(UMLOS_DTYPE_F64, {2, 3}, {1, 2, 3, 4, 5, 6})},
      {"latent.count", host_tensor<int64_t>(UMLOS_DTYPE_I64, {}, {2})},
      {"data.cursor", host_tensor<int64_t>(UMLOS_DTYPE_I64, {2}, {1, 17})},
      {"data.permutation_hash", host_tensor<uint8_t>(UMLOS_DTYPE_U8, {32}, std::vector<uint8_t>(32, 0xab))},
      {"state", host_tensor<int64_t>(UMLOS_DTYPE_I64, {}, {1})},
      {"sil_mean", host_tensor<double>(UMLOS_DTYPE_F64, {}, {std::nan("")})},
      {"cluster.centroids", host_tensor<double>(UMLOS_DTYPE_F64, {0, 3}, {})},
  };
  if (reverse_order) std::reverse(vals.begin(), vals.end());
  for (auto& [name, h] : vals) host.set_value(name, host.from_host(h), true);
  host.set_value("batch.x", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {1, 2}, {9, 9})), false);
  host.rng().set_key(0x01234567u, 0x89abcdefu);
  host.rng().set_offset(UMLOS_STREAM_INIT, 3);
  host.rng().set_offset(UMLOS_STREAM_CLUSTER, 11);
  host.rng().set_offset(UMLOS_STREAM_MISC, 42);
  host.set_iteration(42);
}

CheckpointExtras extras() {
  CheckpointExtras x;
  x.state_fp = sha256(std::string_view("state"));
  x.functional_fp = sha256(std::string_view("functional"));
  x.trace_bytes = 12345;
  TapeState ts;
  ts.events = 42;
  ts.chain = tape_chain_start();
  ts.pending.assign(42 * kTapeEventBytes, 0x5a);
  ts.file_bytes = kTapeHeaderBytes + 42 * kTapeEventBytes;
  x.tape = ts;
  return x;
}

std::vector<uint8_t> sample_checkpoint(std::string* path_out = nullptr) {
  Manifest m = walk();
  Host host;
  load(host, m);
  fill(host, false);
  std::string dir = temp_dir("ckpt-sample");
  std::string path = write_checkpoint(dir, m, host, extras());
  if (path_out) *path_out = path;
  return read_file(path);
}

// The expectation that `fn` throws Failure(code) whose message holds every part.
template <typename Fn>
void require_failure(Fn&& fn, umlos_status code, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL("no failure thrown");
  } catch (const Failure& f) {
    INFO(f.what());
    CHECK(f.code() == code);
    for (const std::string& p : parts) CHECK(std::string(f.what()).find(p) != std::string::npos);
  }
}

}  // namespace

TEST_CASE(
    "Two hosts holding the same run state write byte-identical checkpoints, whatever order the values were set in",
    "[checkpoint]") {
  Manifest m = walk();
  Host a, b;
  load(a, m);
  load(b, m);
  fill(a, false);
  fill(b, true);
  std::string da = temp_dir("ckpt-a"), db = temp_dir("ckpt-b");
  std::string fa = write_checkpoint(da, m, a, extras());
  std::string fb = write_checkpoint(db, m, b, extras());
  CHECK(fs::path(fa).filename() == "ckpt_00000042.pb");
  CHECK(read_text(da + "/checkpoints/latest") == "ckpt_00000042.pb\n");
  REQUIRE(read_file(fa) == read_file(fb));
  CHECK(encode_checkpoint(m, a, extras()) == read_file(fa));

  // Any change of the state changes the bytes.
  a.rng().set_offset(UMLOS_STREAM_MISC, 43);
  CHECK(encode_checkpoint(m, a, extras()) != read_file(fb));
  // No temporary file is left next to the checkpoint.
  for (const auto& e : fs::directory_iterator(da + "/checkpoints")) {
    CHECK((e.path().filename() == "ckpt_00000042.pb" || e.path().filename() == "latest"));
  }
}

TEST_CASE("A checkpoint read back holds every persistent value, the RNG, t, the hashes and the tape state",
          "[checkpoint]") {
  std::string path;
  sample_checkpoint(&path);
  CheckpointData ck = read_checkpoint(path);
  Manifest m = walk();
  CHECK(ck.file == path);
  CHECK(ck.format_version == kCheckpointFormatVersion);
  CHECK(ck.spec_version == m.spec_version);
  CHECK(ck.manifest_cbor == m.canonical_bytes);
  CHECK(ck.manifest_hash == m.manifest_hash);
  CHECK(ck.replay_token == m.replay_token);
  CHECK(ck.policy_hash == m.policy_hash);
  CHECK(ck.env_manifest_hash == m.env_manifest_hash);
  CHECK(ck.t == 42);
  REQUIRE(ck.modules.size() == 2);
  CHECK(ck.modules[0].sha256 == m.modules[0].sha256);
  CHECK(ck.modules[1].sha256 == m.modules[1].sha256);
  std::vector<std::string> names;
  for (const CheckpointValue& v : ck.values) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"cluster.centroids", "data.cursor", "data.permutation_hash", "latent.count",
                                          "latent.z", "loss_hist", "opt.m.w", "opt.step", "sil_mean", "state",
                                          "theta.b", "theta.w"});
  CHECK(ck.values[11].tensor.dtype == UMLOS_DTYPE_F64);
  CHECK(ck.values[11].tensor.shape.rank == 2);
  CHECK(ck.values[11].tensor.shape.dims[0] == 3);
  double w0;
  std::memcpy(&w0, ck.values[11].tensor.data.data(), 8);
  CHECK(w0 == 0.1);
  CHECK(ck.rng_key == std::array<uint32_t, 2>{0x01234567u, 0x89abcdefu});
  CHECK(ck.rng_offsets == std::array<uint64_t, 4>{0, 3, 11, 42});
  CHECK(ck.state_fp == extras().state_fp);
  CHECK(ck.functional_fp == extras().functional_fp);
  CHECK(ck.trace_bytes == 12345);
  REQUIRE(ck.tape);
  CHECK(ck.tape->events == 42);
  CHECK(ck.tape->pending == extras().tape->pending);
  CHECK(ck.tape->file_bytes == extras().tape->file_bytes);
  CHECK(latest_checkpoint(fs::path(path).parent_path().parent_path().string()) == path);
}

TEST_CASE("restore_into puts the checkpoint's values, RNG and t into a fresh host of the same run", "[checkpoint]") {
  std::string path;
  sample_checkpoint(&path);
  CheckpointData ck = read_checkpoint(path);
  Manifest m = walk();
  Host host;
  load(host, m);
  // What a bootstrap leaves before the restore: a parameter in its layout
  // (the checkpoint must keep it), a stale persistent value and an
  // iteration-local one.
  host.set_value("theta.w", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {3, 2}, {7, 7, 7, 7, 7, 7})), true);
  host.set_value("theta.stale", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {1}, {7.0})), true);
  host.set_value("data.train.x", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {1}, {3.0})), false);
  restore_into(host, ck, m);

  CHECK(host.iteration() == 42);
  CHECK(host.rng().key() == std::array<uint32_t, 2>{0x01234567u, 0x89abcdefu});
  CHECK(host.rng().offset(UMLOS_STREAM_MISC) == 42);
  CHECK(host.values().count("theta.stale") == 0);
  CHECK(host.values().count("data.train.x") == 1);
  CHECK_FALSE(host.is_persistent("data.train.x"));
  std::vector<std::string> names = host.persistent_value_names();
  REQUIRE(names.size() == ck.values.size());
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(names[i] == ck.values[i].name);
    HostTensor h = host.to_host(*host.values().at(names[i]));
    CHECK(h.dtype == ck.values[i].tensor.dtype);
    CHECK(h.shape.rank == ck.values[i].tensor.shape.rank);
    CHECK(h.data == ck.values[i].tensor.data);
  }
  // The restored host checkpoints to the very same bytes.
  CheckpointExtras x = extras();
  CHECK(encode_checkpoint(m, host, x) == read_file(path));
}

TEST_CASE("Every truncation of a checkpoint is refused with CHECKPOINT_INVALID naming the file", "[checkpoint]") {
  std::string path;
  std::vector<uint8_t> bytes = sample_checkpoint(&path);
  REQUIRE(bytes.size() > 100);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    try {
      decode_checkpoint(cut, "cut.pb");
      FAIL("a checkpoint truncated to " << n << " of " << bytes.size() << " bytes was accepted");
    } catch (const Failure& f) {
      if (f.code() != UMLOS_CHECKPOINT_INVALID || std::string(f.what()).find("cut.pb") == std::string::npos) {
        FAIL("truncated to " << n << ": " << status_name(f.code()) << ": " << f.what());
      }
    }
  }
  // Through the file API: the message names the file and the missing field.
  std::string cut = path + ".cut";
  write_file_atomic(cut, bytes.data(), bytes.size() - 35);
  require_failure([&] { read_checkpoint(cut); }, UMLOS_CHECKPOINT_INVALID, {cut, "content_sha256", "truncated"});
  require_failure([&] { read_checkpoint(path + ".missing"); }, UMLOS_NOT_FOUND, {path + ".missing"});
}

TEST_CASE("A checkpoint with any single byte changed is refused with CHECKPOINT_INVALID", "[checkpoint]") {
  std::vector<uint8_t> bytes = sample_checkpoint();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x01;
    try {
      decode_checkpoint(bad, "flip.pb");
      FAIL("a checkpoint with byte " << i << " flipped was accepted");
    } catch (const Failure& f) {
      if (f.code() != UMLOS_CHECKPOINT_INVALID) FAIL("byte " << i << ": " << status_name(f.code()) << ": " << f.what());
    }
  }
  // A flipped value byte: the content digest names both digests.
  std::vector<uint8_t> bad = bytes;
  bad[bytes.size() / 2] ^= 0x40;
  require_failure([&] { decode_checkpoint(bad, "flip.pb"); }, UMLOS_CHECKPOINT_INVALID,
                  {"flip.pb", "content_sha256", "corrupt"});
}

TEST_CASE("A checkpoint of another format version is refused naming format_version, expected and found",
          "[checkpoint]") {
  std::vector<uint8_t> bytes = sample_checkpoint();
  // content_sha256 is field 100, serialised last: tag a2 06, length 20, 32 bytes.
  const size_t trailer = 35;
  REQUIRE(bytes[bytes.size() - trailer] == 0xa2);
  REQUIRE(bytes[bytes.size() - trailer + 1] == 0x06);
  std::vector<uint8_t> body(bytes.begin(), bytes.end() - trailer);
  REQUIRE(body[0] == 0x08);  // field 1, varint
  REQUIRE(body[1] == 0x01);  // format_version 1
  body[1] = 0x02;
  Digest d = sha256(body);
  std::vector<uint8_t> v2 = body;
  v2.insert(v2.end(), {0xa2, 0x06, 0x20});
  v2.insert(v2.end(), d.begin(), d.end());
  require_failure([&] { decode_checkpoint(v2, "v2.pb"); }, UMLOS_CHECKPOINT_INVALID,
                  {"v2.pb", "format_version", "expected 1", "found 2"});
}

TEST_CASE("Restore refuses a checkpoint of another manifest, other module hashes or another replay token",
          "[checkpoint]") {
  std::string path;
  sample_checkpoint(&path);
  CheckpointData ck = read_checkpoint(path);

  SECTION("another manifest (another seed)") {
    Manifest other = walk(8);
    Host host;
    load(host, other);
    require_failure([&] { restore_into(host, ck, other); }, UMLOS_CHECKPOINT_INVALID,
                    {path, "manifest_cbor", to_hex(other.manifest_hash), to_hex(ck.manifest_hash), "another run"});
    CHECK(host.persistent_value_names().empty());  // nothing restored
  }
  SECTION("another module build") {
    Manifest m = walk();
    Host host;
    load(host, m);
    ck.modules[1].sha256[0] ^= 0xff;
    require_failure([&] { restore_into(host, ck, m); }, UMLOS_CHECKPOINT_INVALID,
                    {"modules[1].sha256", to_hex(m.modules[1].sha256), to_hex(ck.modules[1].sha256)});
  }
  SECTION("fewer modules loaded") {
    Manifest m = walk();
    Host host;
    host.load(kModules[0], std::nullopt);
    host.activate_driver("cpu_driver");
    require_failure([&] { restore_into(host, ck, m); }, UMLOS_CHECKPOINT_INVALID,
                    {"field 'modules'", "expected 1 loaded modules", "found 2"});
  }
  SECTION("another replay token") {
    Manifest m = walk();
    Host host;
    load(host, m);
    ck.replay_token[5] ^= 0x10;
    require_failure([&] { restore_into(host, ck, m); }, UMLOS_CHECKPOINT_INVALID,
                    {"replay_token", to_hex(m.replay_token), to_hex(ck.replay_token)});
  }
  SECTION("another backend, when the same backend is required") {
    Manifest m = walk();
    Host host;
    load(host, m);
    ck.backend_hash[0] ^= 0x01;
    CHECK_NOTHROW(verify_checkpoint(ck, m, host));
    RestoreOptions strict;
    strict.require_same_backend = true;
    require_failure([&] { verify_checkpoint(ck, m, host, strict); }, UMLOS_CHECKPOINT_INVALID, {"backend_hash"});
  }
}

TEST_CASE("latest_checkpoint names the newest checkpoint and refuses a missing or malformed pointer", "[checkpoint]") {
  std::string dir = temp_dir("ckpt-latest");
  require_failure([&] { latest_checkpoint(dir); }, UMLOS_NOT_FOUND, {dir, "latest"});
  Manifest m = walk();
  Host host;
  load(host, m);
  fill(host, false);
  host.set_iteration(5);
  write_checkpoint(dir, m, host, {});
  host.set_iteration(10);
  std::string second = write_checkpoint(dir, m, host, {});
  CHECK(latest_checkpoint(dir) == second);
  CHECK(read_checkpoint(second).t == 10);
  CHECK_FALSE(read_checkpoint(second).tape);
  CHECK_FALSE(read_checkpoint(second).state_fp);
  write_text(dir + "/checkpoints/latest", "../../etc/passwd\n");
  require_failure([&] { latest_checkpoint(dir); }, UMLOS_CHECKPOINT_INVALID, {"ckpt_<8 digits>.pb", "passwd"});
}

TEST_CASE("truncate_trace cuts the trace back to a record boundary and refuses anything else", "[checkpoint]") {
  std::string dir = temp_dir("ckpt-trace");
  std::string trace = dir + "/trace.jsonl";
  const std::string kept = "{\"record\":\"run_header\"}\n{\"record\":\"iter\",\"t\":1}\n";
  write_text(trace, kept + "{\"record\":\"iter\",\"t\":2}\n{\"record\":\"iter\",\"t\":3");
  truncate_trace(trace, kept.size());
  CHECK(read_text(trace) == kept);
  require_failure([&] { truncate_trace(trace, kept.size() + 10); }, UMLOS_CHECKPOINT_INVALID,
                  {trace, "trace_bytes", std::to_string(kept.size() + 10), std::to_string(kept.size())});
  require_failure([&] { truncate_trace(trace, 5); }, UMLOS_CHECKPOINT_INVALID, {trace, "byte 4", "newline"});
  CHECK(read_text(trace) == kept);
  require_failure([&] { truncate_trace(dir + "/none.jsonl", 0); }, UMLOS_NOT_FOUND, {"none.jsonl"});
}

// ---------------------------------------------------------------- the tape

namespace {

TapeEvent event(int64_t t) {
  TapeEvent e;
  e.t = t;
  e.action = static_cast<uint8_t>(t % 7 == 0 ? 1 : 0);
  e.state = static_cast<uint8_t>(t > 900 ? 1 : 0);
  if (t % 11 != 0) e.loss_total = 1.0 / static_cast<double>(t);
  Sha256 h;
  h.update_u64_be(static_cast<uint64_t>(t));
  e.state_fp = h.finish();
  return e;
}

}  // namespace

TEST_CASE("The tape writes one 64-byte event per iteration and chains its 512-event blocks into tape_digest",
          "[checkpoint][tape]") {
  std::string file = temp_dir("tape") + "/tape.bin";
  TapeWriter w;
  w.open(file);
  for (int64_t t = 1; t <= 1300; ++t) w.append(event(t));
  Digest digest = w.close();
  std::vector<uint8_t> bytes = read_file(file);
  REQUIRE(bytes.size() == 16 + 1300 * 64);
  CHECK(std::string(bytes.begin(), bytes.begin() + 8) == "UMLTAPE1");

  // The definition, recomputed here: d_k = SHA-256(d_{k-1} || block_k),
  // then the partial block.
  Digest d = sha256(std::string_view("UML_OS.IO.WriteTape_v1"));
  for (int k = 0; k < 2; ++k) {
    Sha256 h;
    h.update(d);
    h.update(bytes.data() + 16 + k * 512 * 64, 512 * 64);
    d = h.finish();
  }
  Sha256 h;
  h.update(d);
  h.update(bytes.data() + 16 + 1024 * 64, 276 * 64);
  CHECK(h.finish() == digest);

  // An event's layout: magic, t, action, state, flags, loss bits, state_fp.
  const uint8_t* e7 = bytes.data() + 16 + 6 * 64;
  CHECK(std::string(e7, e7 + 4) == "UTEV");
  CHECK(e7[11] == 7);  // t, big-endian
  CHECK(e7[12] == 1);  // probe
  CHECK(e7[14] == 1);  // loss present
  const Digest fp7 = event(7).state_fp;
  CHECK(std::vector<uint8_t>(e7 + 24, e7 + 56) == std::vector<uint8_t>(fp7.begin(), fp7.end()));

  TapeContents c = read_tape(file);
  CHECK(c.events.size() == 1300);
  CHECK(c.blocks == 2);
  CHECK(c.digest == digest);
  CHECK(c.events[6].action == 1);
  CHECK(*c.events[0].loss_total == 1.0);
  CHECK_FALSE(c.events[10].loss_total);  // t = 11
  CHECK(c.events[1299].state == 1);
}

TEST_CASE("A tape resumed from its checkpointed state has the same bytes and digest as an uninterrupted one",
          "[checkpoint][tape]") {
  std::string dir = temp_dir("tape-resume");
  TapeWriter a;
  a.open(dir + "/a.bin");
  for (int64_t t = 1; t <= 1300; ++t) a.append(event(t));
  Digest da = a.close();

  for (int64_t at : {700, 512, 1024, 1}) {
    std::string fb = dir + "/b" + std::to_string(at) + ".bin";
    TapeWriter b;
    b.open(fb);
    for (int64_t t = 1; t <= at; ++t) b.append(event(t));
    TapeState s = b.state();
    // The state travels through a checkpoint.
    Manifest m = walk();
    Host host;
    load(host, m);
    host.set_iteration(at);
    CheckpointExtras x;
    x.tape = s;
    CheckpointData ck = decode_checkpoint(encode_checkpoint(m, host, x), "tape-ckpt");
    REQUIRE(ck.tape);
    // Progress after the checkpoint that the crash loses.
    for (int64_t t = at + 1; t <= at + 40; ++t) b.append(event(t));
    b.close();
    TapeWriter r;
    r.resume(fb, *ck.tape);
    CHECK(r.events() == static_cast<uint64_t>(at));
    for (int64_t t = at + 1; t <= 1300; ++t) r.append(event(t));
    CHECK(r.close() == da);
    CHECK(read_file(fb) == read_file(dir + "/a.bin"));
  }
}

TEST_CASE("Resuming a tape that does not match the checkpoint's tape state is refused", "[checkpoint][tape]") {
  std::string dir = temp_dir("tape-mismatch");
  TapeWriter w;
  w.open(dir + "/t.bin");
  for (int64_t t = 1; t <= 600; ++t) w.append(event(t));
  TapeState s = w.state();
  w.close();
  TapeState shorter = s;
  shorter.events = 700;
  shorter.file_bytes = 16 + 700 * 64;
  shorter.pending.resize((700 - 512) * 64);
  TapeWriter r;
  require_failure([&] { r.resume(dir + "/t.bin", shorter); }, UMLOS_CHECKPOINT_INVALID,
                  {"t.bin", "tape.file_bytes", std::to_string(16 + 700 * 64), std::to_string(16 + 600 * 64)});
  TapeState chain = s;
  chain.chain[0] ^= 1;
  require_failure([&] { r.resume(dir + "/t.bin", chain); }, UMLOS_CHECKPOINT_INVALID, {"tape.chain_digest"});
  TapeState pending = s;
  pending.pending[70] ^= 1;
  require_failure([&] { r.resume(dir + "/t.bin", pending); }, UMLOS_CHECKPOINT_INVALID, {"tape.pending"});
  CHECK(read_file(dir + "/t.bin").size() == 16 + 600 * 64);  // untouched by a refused resume
}

TEST_CASE("The tape refuses event 500001 with TAPE_OVERFLOW and an event out of sequence", "[checkpoint][tape]") {
  std::string file = temp_dir("tape-overflow") + "/tape.bin";
  TapeWriter w;
  w.open(file);
  require_failure([&] { w.append(event(2)); }, UMLOS_INVALID_ARGUMENT, {"t=1", "found t=2"});
  TapeEvent e;  // a cheap event: only t changes
  e.loss_total = 0.5;
  for (int64_t t = 1; t <= 500000; ++t) {
    e.t = t;
    w.append(e);
  }
  require_failure([&] { w.append(event(500001)); }, UMLOS_TAPE_OVERFLOW,
                  {file, "t=500001", "event 500001", "max_events is 500000"});
  CHECK(w.events() == 500000);
  Digest d = w.close();
  CHECK(read_tape(file).digest == d);
  CHECK(exit_code_for(UMLOS_TAPE_OVERFLOW) == 59);
}

TEST_CASE("The tape reader refuses a truncated tape, a corrupt event, a broken sequence and a foreign header",
          "[checkpoint][tape]") {
  std::string dir = temp_dir("tape-bad");
  std::string file = dir + "/tape.bin";
  TapeWriter w;
  w.open(file);
  for (int64_t t = 1; t <= 20; ++t) w.append(event(t));
  w.close();
  const std::vector<uint8_t> good = read_file(file);
  CHECK(read_tape(file).events.size() == 20);

  auto with = [&](std::vector<uint8_t> b) {
    write_file_atomic(dir + "/bad.bin", b);
    return dir + "/bad.bin";
  };
  std::vector<uint8_t> cut(good.begin(), good.end() - 10);
  require_failure([&] { read_tape(with(cut)); }, UMLOS_DATA_LOSS, {"bad.bin", "framing", "19 events and 54 bytes"});

  std::vector<uint8_t> flip = good;
  flip[16 + 3 * 64 + 20] ^= 0x04;  // loss bits of event 3
  require_failure([&] { read_tape(with(flip)); }, UMLOS_DATA_LOSS, {"bad.bin", "event 3", "crc32", "byte 208"});

  // A well-formed event in the wrong place (events 4 and 5 swapped).
  std::vector<uint8_t> swap = good;
  std::swap_ranges(swap.begin() + 16 + 4 * 64, swap.begin() + 16 + 5 * 64, swap.begin() + 16 + 5 * 64);
  require_failure([&] { read_tape(with(swap)); }, UMLOS_DATA_LOSS, {"event 4", "field 't'", "expected 5", "found 6"});

  std::vector<uint8_t> header = good;
  header[7] = '2';
  require_failure([&] { read_tape(with(header)); }, UMLOS_DATA_LOSS, {"header.magic", "UMLTAPE1"});

  // An event whose CRC is right but whose action is outside 0..3.
  std::vector<uint8_t> raw = encode_tape_event(event(1));
  raw[12] = 9;
  const uint32_t crc = static_cast<uint32_t>(::crc32(0L, raw.data(), 60));
  for (int i = 0; i < 4; ++i) raw[60 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  std::vector<uint8_t> act = good;
  std::copy(raw.begin(), raw.end(), act.begin() + 16);
  require_failure([&] { read_tape(with(act)); }, UMLOS_DATA_LOSS, {"event 0", "field 'action'", "0..3", "found 9"});
  raw[12] = 0;
  act = good;
  std::copy(raw.begin(), raw.end(), act.begin() + 16);
  raw[60] ^= 1;
  std::copy(raw.begin(), raw.end(), act.begin() + 16);
  require_failure([&] { read_tape(with(act)); }, UMLOS_DATA_LOSS, {"event 0", "crc32"});
}

// ------------------------------------------------ resume, end to end

namespace {

// A miniature of the procedure's loop (kernel/runtime/procedure.cpp) on a real
// Host: each iteration draws from the misc stream, updates a persistent
// theta, appends an iter record to trace.jsonl and an event to tape.bin,
// and checkpoints every 5 iterations after the iter record.
struct MiniRun {
  Manifest m = walk();
  Host host;
  std::string dir;
  FILE* trace = nullptr;
  TapeWriter tape;

  explicit MiniRun(std::string d) : dir(std::move(d)) {
    load(host, m);  // bootstrap: modules, driver, RNG, initial values
    host.rng().seed_from_manifest(m.manifest_hash);
    host.set_value("theta.w", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {4}, {0, 0, 0, 0})), true);
    host.set_value("data.train.x", host.from_host(host_tensor<double>(UMLOS_DTYPE_F64, {1}, {1})), false);
    host.set_iteration(0);
  }
  ~MiniRun() {
    if (trace) std::fclose(trace);
  }
  void write_line(const std::string& l) {
    std::fwrite(l.data(), 1, l.size(), trace);
    std::fflush(trace);
  }
  void start() {
    trace = std::fopen((dir + "/trace.jsonl").c_str(), "wb");
    write_line("{\"record\":\"run_header\",\"replay_token\":\"" + to_hex(m.replay_token) + "\"}\n");
    tape.open(dir + "/tape.bin");
  }
  CheckpointData resume() {
    CheckpointData ck = resume_from_checkpoint(host, m, dir, &tape);
    trace = std::fopen((dir + "/trace.jsonl").c_str(), "ab");
    return ck;
  }
  void step() {
    const int64_t t = host.iteration() + 1;
    host.set_iteration(t);
    double u[4];
    host.rng().fill_host(UMLOS_STREAM_MISC, host.rng().take(UMLOS_STREAM_MISC), UMLOS_DIST_UNIFORM_F64, u, 4);
    HostTensor w = host.to_host(*host.values().at("theta.w"));
    double* p = reinterpret_cast<double*>(w.data.data());
    double loss = 0;
    for (int i = 0; i < 4; ++i) {
      p[i] += 0.1 * (u[i] - 0.5);
      loss += p[i] * p[i];
    }
    host.set_value("theta.w", host.from_host(w), true);
    Sha256 h;
    h.update_u64_be(static_cast<uint64_t>(t));
    h.update(w.data.data(), w.data.size());
    const Digest fp = h.finish();
    char num[40];
    std::snprintf(num, sizeof num, "%.17g", loss);
    write_line("{\"record\":\"iter\",\"t\":" + std::to_string(t) + ",\"loss_total\":" + num + ",\"state_fp\":\"" +
               to_hex(fp) + "\"}\n");
    TapeEvent e;
    e.t = t;
    e.action = static_cast<uint8_t>(t % 3 == 0 ? 1 : 0);
    e.loss_total = loss;
    e.state_fp = fp;
    tape.append(e);
    if (t % 5 == 0) {
      CheckpointExtras x;
      x.state_fp = fp;
      x.trace_bytes = static_cast<uint64_t>(std::ftell(trace));
      x.tape = tape.state();
      write_checkpoint(dir, m, host, x);
    }
  }
  void finish() { write_line("{\"record\":\"run_end\",\"tape_digest\":\"" + to_hex(tape.close()) + "\"}\n"); }
};

}  // namespace

TEST_CASE(
    "A run resumed from its latest checkpoint writes the same trace, tape and checkpoints as an uninterrupted run",
    "[checkpoint]") {
  std::string da = temp_dir("mini-a"), db = temp_dir("mini-b");
  {
    MiniRun a(da);
    a.start();
    for (int i = 0; i < 17; ++i) a.step();
    a.finish();
  }
  {
    MiniRun b(db);  // crashes after t = 12: records and events of 11, 12 are past the checkpoint
    b.start();
    for (int i = 0; i < 12; ++i) b.step();
  }
  CHECK(read_text(db + "/trace.jsonl").size() > read_checkpoint(latest_checkpoint(db)).trace_bytes);
  {
    MiniRun c(db);  // a new process: bootstrap, then resume
    CheckpointData ck = c.resume();
    CHECK(ck.t == 10);
    CHECK(c.host.iteration() == 10);
    CHECK(c.tape.events() == 10);
    for (int i = 0; i < 7; ++i) c.step();
    c.finish();
  }
  CHECK(read_text(db + "/trace.jsonl") == read_text(da + "/trace.jsonl"));
  CHECK(read_file(db + "/tape.bin") == read_file(da + "/tape.bin"));
  CHECK(read_file(db + "/checkpoints/ckpt_00000015.pb") == read_file(da + "/checkpoints/ckpt_00000015.pb"));
  CHECK(read_tape(db + "/tape.bin").events.size() == 17);
}

TEST_CASE("Resume refuses a run folder without a checkpoint and a checkpoint without the tape the run keeps",
          "[checkpoint]") {
  std::string dir = temp_dir("mini-none");
  MiniRun r(dir);
  require_failure([&] { r.resume(); }, UMLOS_NOT_FOUND, {dir, "latest"});
  r.start();
  r.host.set_iteration(3);
  write_checkpoint(dir, r.m, r.host, {});
  require_failure([&] { r.resume(); }, UMLOS_CHECKPOINT_INVALID, {"ckpt_00000003.pb", "field 'tape'", "found none"});
}
