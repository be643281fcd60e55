// cpu_driver's collectives between real processes: each rank is this test
// program started again on a hidden test case, joins the job through a
// file rendezvous and moves blocks far larger than a socket's buffers, so
// a schedule in which two ranks both wait to write to each other would
// hang (and fail at the timeout) instead of passing.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../comm_support.hpp"
#include "cpu_driver_support.hpp"

extern char** environ;

namespace {

using cpu_driver_test::make_host;

// The byte at `i` of the block that rank `from` sends to rank `to` in
// collective `which`.
uint8_t pattern(int which, int from, int to, uint64_t i) {
  return static_cast<uint8_t>((i * 2654435761u >> 7) ^ (uint64_t(which) * 131 + uint64_t(from) * 17 + uint64_t(to)));
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

}  // namespace

TEST_CASE("one rank of the collectives job (started by the test below)", "[.collectives-peer]") {
  const int rank = env_int("UMLOS_PEER_RANK"), world = env_int("UMLOS_PEER_WORLD");
  const uint64_t kBlock = uint64_t(env_int("UMLOS_PEER_MIB")) << 20;
  const char* dir = std::getenv("UMLOS_PEER_DIR");
  REQUIRE(rank >= 0);
  REQUIRE(world >= 1);
  REQUIRE(dir != nullptr);
  REQUIRE(kBlock > 0);
  auto host = make_host(1);
  const std::string rendezvous = std::string("file:") + dir;
  umlos_comm_config c = umlos_test::one_rank_comm(rendezvous, "big", 30000);
  c.rank = rank;
  c.world_size = world;
  host->device().join(c);
  auto bytes = [&](uint64_t n) {
    umlos_shape s{};
    s.rank = 1;
    s.dims[0] = static_cast<int64_t>(n);
    return host->make_tensor(UMLOS_DTYPE_U8, s, false);
  };
  const uint64_t W = static_cast<uint64_t>(world);
  std::vector<uint8_t> buf(W * kBlock);
  // all_to_all: block k of rank r's input goes to rank k.
  for (int to = 0; to < world; ++to)
    for (uint64_t i = 0; i < kBlock; ++i) buf[uint64_t(to) * kBlock + i] = pattern(0, rank, to, i);
  umlos::TensorPtr in = bytes(W * kBlock), out = bytes(W * kBlock);
  host->write(*in, buf.data(), buf.size());
  host->device().all_to_all(*in, *out);
  host->read(*out, buf.data(), buf.size());
  bool ok = true;
  for (int from = 0; from < world; ++from)
    for (uint64_t i = 0; i < kBlock; ++i) ok = ok && buf[uint64_t(from) * kBlock + i] == pattern(0, from, rank, i);
  CHECK(ok);
  // all_gather: every rank's block, in rank order.
  std::vector<uint8_t> mine(kBlock);
  for (uint64_t i = 0; i < kBlock; ++i) mine[i] = pattern(1, rank, 0, i);
  umlos::TensorPtr one = bytes(kBlock);
  host->write(*one, mine.data(), kBlock);
  host->device().all_gather(*one, *out);
  host->read(*out, buf.data(), buf.size());
  ok = true;
  for (int from = 0; from < world; ++from)
    for (uint64_t i = 0; i < kBlock; ++i) ok = ok && buf[uint64_t(from) * kBlock + i] == pattern(1, from, 0, i);
  CHECK(ok);
  // broadcast from the last rank.
  for (uint64_t i = 0; i < kBlock; ++i) mine[i] = rank == world - 1 ? pattern(2, rank, 0, i) : 0;
  host->write(*one, mine.data(), kBlock);
  host->device().broadcast(*one, world - 1);
  host->read(*one, mine.data(), kBlock);
  ok = true;
  for (uint64_t i = 0; i < kBlock; ++i) ok = ok && mine[i] == pattern(2, world - 1, 0, i);
  CHECK(ok);
}

// Loopback TCP here lets a socket hold up to 4 MiB sent and 32 MiB
// received (net.core.wmem_max, net.ipv4.tcp_rmem): 40 MiB blocks overflow
// both, so two ranks that both wrote first would wait on each other.
TEST_CASE(
    "cpu_driver's collectives move blocks larger than the socket buffers between real processes, each byte where "
    "it belongs",
    "[cpu_driver][collectives][gloo]") {
  for (auto [world, mib] : {std::pair{2, 40}, std::pair{3, 6}}) {
    INFO(world << " ranks, " << mib << " MiB blocks");
    char dir[] = "/tmp/umlos-big-collectives-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    std::vector<pid_t> pids;
    for (int rank = 0; rank < world; ++rank) {
      std::vector<std::string> env_s;
      for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
      env_s.push_back("UMLOS_PEER_RANK=" + std::to_string(rank));
      env_s.push_back("UMLOS_PEER_WORLD=" + std::to_string(world));
      env_s.push_back(std::string("UMLOS_PEER_DIR=") + dir);
      env_s.push_back("UMLOS_PEER_MIB=" + std::to_string(mib));
      std::vector<char*> envp;
      for (std::string& s : env_s) envp.push_back(s.data());
      envp.push_back(nullptr);
      // --warn NoTests: a rank that matched no test fails instead of passing.
      std::string self = "/proc/self/exe", tag = "[.collectives-peer]", warn = "--warn", no_tests = "NoTests";
      char* argv[] = {self.data(), tag.data(), warn.data(), no_tests.data(), nullptr};
      pid_t pid = 0;
      REQUIRE(::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) == 0);
      pids.push_back(pid);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    for (pid_t pid : pids) {
      int status = -1;
      while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > until) {
          for (pid_t p : pids) ::kill(p, SIGKILL);
          FAIL("a rank did not finish within 90 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
    std::filesystem::remove_all(dir);
  }
}
