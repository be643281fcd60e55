// tcp_store.tests.cpp — the TCP rendezvous store (modules/lib/rendezvous)
// over real sockets on 127.0.0.1: rank 0 serves, the other ranks read and
// write through it; what it refuses, and how long a missing key waits.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../comm_support.hpp"
#include "tcp_store.hpp"

using umlos::rendezvous::parse_tcp_rendezvous;
using umlos::rendezvous::TcpStore;
using umlos_test::free_port;

namespace {

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A socket connected to 127.0.0.1:port, speaking no protocol of its own.
int raw_client(const std::string& port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

// The answer a raw client gets for `request`: one frame (a status byte, a
// 4-byte length, that many bytes), what came before the store closed the
// connection, or "" when it closed without answering.
std::string raw_exchange(const std::string& port, const std::string& request) {
  const int s = raw_client(port);
  REQUIRE(::send(s, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string got;
  auto whole = [&] {
    if (got.size() < 5) return false;
    const size_t len = (size_t(uint8_t(got[1])) << 24) | (size_t(uint8_t(got[2])) << 16) |
                       (size_t(uint8_t(got[3])) << 8) | size_t(uint8_t(got[4]));
    return got.size() >= 5 + len;
  };
  char buf[256];
  ssize_t n;
  while (!whole() && got.size() < 4096 && (n = ::recv(s, buf, sizeof buf, 0)) > 0)
    got.append(buf, static_cast<size_t>(n));
  ::close(s);
  return got;
}

}  // namespace

TEST_CASE("A tcp:// rendezvous is HOST:PORT with a port of 1..65535, an IPv6 host in brackets", "[rendezvous]") {
  std::string host, port;
  CHECK(parse_tcp_rendezvous("tcp://10.0.0.7:29500", &host, &port));
  CHECK(host == "10.0.0.7");
  CHECK(port == "29500");
  CHECK(parse_tcp_rendezvous("tcp://node-01.cluster:1", &host, &port));
  CHECK(host == "node-01.cluster");
  CHECK(parse_tcp_rendezvous("tcp://[fe80::1]:65535", &host, &port));
  CHECK(host == "fe80::1");
  for (const char* bad : {"tcp://host", "tcp://:29500", "tcp://host:0", "tcp://host:65536", "tcp://host:29a0",
                          "tcp://fe80::1:29500", "tcp://[fe80::1]29500", "file:/tmp/x", "tcp://host:123456"})
    CHECK_FALSE(parse_tcp_rendezvous(bad, &host, &port));
}

TEST_CASE("The TCP rendezvous store serves rank 0's keys to the other ranks and refuses a key set twice",
          "[rendezvous]") {
  const std::string port = std::to_string(free_port());
  const std::chrono::milliseconds timeout(5000);
  TcpStore zero("127.0.0.1", port, 0, 3, timeout);
  std::vector<char> one_saw, two_saw;
  std::string twice;
  std::thread one([&] {
    TcpStore s("127.0.0.1", port, 1, 3, timeout);
    s.set("rank1", bytes("address of one"));
    s.wait({"rank0", "rank2"}, timeout);
    one_saw = s.get("rank2");
    try {
      s.set("rank2", bytes("an impostor"));
    } catch (const std::runtime_error& e) {
      twice = e.what();
    }
  });
  std::thread two([&] {
    TcpStore s("127.0.0.1", port, 2, 3, timeout);
    s.set("rank2", bytes("address of two"));
    two_saw = s.get("rank0");
  });
  zero.set("rank0", bytes("address of zero"));
  CHECK(zero.get("rank1") == bytes("address of one"));
  one.join();
  two.join();
  CHECK(one_saw == bytes("address of two"));
  CHECK(two_saw == bytes("address of zero"));
  CHECK(twice.find("'rank2' set twice") != std::string::npos);
  CHECK(zero.get("rank2") == bytes("address of two"));  // the first value stays
  CHECK_THROWS_WITH(zero.set("rank0", bytes("again")), Catch::Contains("set twice"));
}

TEST_CASE("The TCP rendezvous store answers malformed and oversized requests with a refusal, never a value",
          "[rendezvous]") {
  const std::string port = std::to_string(free_port());
  TcpStore zero("127.0.0.1", port, 0, 2, std::chrono::milliseconds(1000));
  zero.set("k", bytes("v"));
  // An unknown request, a key over 4 KiB, a value claimed over 16 MiB.
  for (const std::string& request : {std::string("hello"), std::string("G\x00\x00\x20\x01", 5),
                                     std::string("S\x00\x00\x00\x01k\x01\x00\x00\x01", 10)}) {
    const std::string got = raw_exchange(port, request);
    REQUIRE_FALSE(got.empty());
    CHECK(got[0] == 'E');
  }
  // A well-formed get of the key set above, on a raw connection.
  CHECK(raw_exchange(port, std::string("G\x00\x00\x00\x01k", 6)) == std::string("V\x00\x00\x00\x01v", 6));
  // A get of a key nobody sets waits out the timeout and says which.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(zero.get("never"), Catch::Contains("'never' was not set within 1000 ms"));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(900));
}

TEST_CASE("A rank whose rank 0 never listens gives up after the timeout, naming the address", "[rendezvous]") {
  const std::string port = std::to_string(free_port());
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(TcpStore("127.0.0.1", port, 1, 2, std::chrono::milliseconds(600)),
                    Catch::Contains("could not reach rank 0's rendezvous at 127.0.0.1:" + port));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK_THROWS_WITH(TcpStore("no-such-host.invalid", port, 0, 2, std::chrono::milliseconds(600)),
                    Catch::Contains("does not resolve"));
}

TEST_CASE(
    "The TCP rendezvous store takes at most four connections per rank, and past them a rank fails at once, "
    "never hangs",
    "[rendezvous]") {
  const std::string port = std::to_string(free_port());
  TcpStore zero("127.0.0.1", port, 0, 2, std::chrono::milliseconds(3000));
  zero.set("k", bytes("v"));
  // Eight idle strays (4 x world 2) take every place.
  std::vector<int> strays;
  for (int i = 0; i < 8; ++i) strays.push_back(raw_client(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all accepted
  const auto t0 = std::chrono::steady_clock::now();
  TcpStore one("127.0.0.1", port, 1, 2, std::chrono::milliseconds(3000));  // the kernel completes the handshake
  CHECK_THROWS_WITH(one.get("k"), Catch::Contains("lost its connection to rank 0's rendezvous"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  for (int s : strays) ::close(s);
}
