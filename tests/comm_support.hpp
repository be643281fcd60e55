// comm_support.hpp — the communicator configuration of a one-rank job, for
// the driver tests that join one (cpu_driver over Gloo, cuda_driver over
// NCCL; `rendezvous`, "file:/DIR", must outlive the returned struct), and a
// free port for the tests of the TCP rendezvous.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "umlos_driver.h"

namespace umlos_test {

inline umlos_comm_config one_rank_comm(const std::string& rendezvous, const char* prefix, int64_t timeout_ms) {
  umlos_comm_config c{};
  c.struct_size = sizeof c;
  c.rank = 0;
  c.world_size = 1;
  c.rendezvous = rendezvous.c_str();
  c.prefix = prefix;
  c.listen_host = "127.0.0.1";
  c.timeout_ms = timeout_ms;
  return c;
}

// A TCP port that was free on 127.0.0.1 a moment ago (the kernel's pick).
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (s >= 0) ::close(s);
  if (!ok) throw std::runtime_error("free_port: no port on 127.0.0.1");
  return ntohs(a.sin_port);
}

}  // namespace umlos_test
