// comm_support.hpp — the communicator configuration of a one-rank job, for
// the driver tests that join one (cpu_driver over Gloo, cuda_driver over
// NCCL). `rendezvous` ("file:/DIR") must outlive the returned struct.
#pragma once

#include <cstdint>
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

}  // namespace umlos_test
