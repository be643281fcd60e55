// comm_gloo.hpp — the cpu_driver's collectives (spec 004 0.N: device
// collectives belong to the driver layer) over Gloo's TCP transport: the
// ranks meet through a Gloo FileStore, then talk over a full mesh of TCP
// pairs in Gloo's synchronous mode, each collective a schedule of pairwise
// exchanges (comm_gloo.cpp). Gloo moves the bytes; nothing here sums
// anything, so the result of a collective is the same bytes whatever the
// world size (docs/distributed.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "umlos_driver.h"

namespace cpu_driver {

class Comm {
 public:
  // Joins the job described by `config` (COLLECTIVE_FAILURE when the
  // rendezvous does not complete within the timeout; INVALID_ARGUMENT for a
  // rendezvous that is not "file:/DIR").
  explicit Comm(const umlos_comm_config& config);
  ~Comm();
  int rank() const { return rank_; }
  int world_size() const { return world_; }
  // `out` (world_size * bytes) gets every rank's `in` in rank order.
  void all_gather(const void* in, void* out, uint64_t bytes);
  void broadcast(void* data, uint64_t bytes, int root);
  // `in` and `out` hold world_size blocks of `block` bytes: block k of in
  // goes to rank k, block j of out comes from rank j.
  void all_to_all(const void* in, void* out, uint64_t block);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_ = 1;
};

}  // namespace cpu_driver
