// comm_nccl.hpp — cuda_driver's collectives (ABI 1.7) over NCCL, for jobs
// whose ranks each drive one GPU (docs/distributed.md). libnccl.so.2 is
// opened at run time (like libcuda): the module links no NCCL and loads on
// machines without it; comm_init then reports UNAVAILABLE.
//
// The ranks exchange NCCL's unique id through the job's rendezvous folder
// (rank 0 writes it whole: temporary file, fsync, rename; the others wait
// for it up to the timeout and read it without trusting the folder). Every
// collective runs on the driver's stream and is waited for with a deadline:
// past the timeout the communicator is aborted and the call fails with
// COLLECTIVE_FAILURE, so a dead or hung peer never hangs this rank.
//
// NCCL moves bytes only (all-gather, broadcast, and all-to-all as grouped
// send/recv pairs): nothing is summed on the wire, so the results are the
// same bits as on any other transport.
#pragma once

#include <cstdint>
#include <memory>

#include "cuda_api.hpp"
#include "umlos_driver.h"

namespace cuda_driver {

class NcclComm {
 public:
  // UNAVAILABLE without libnccl.so.2; COLLECTIVE_FAILURE when the ranks do
  // not meet within the timeout; INVALID_ARGUMENT for a malformed config.
  NcclComm(const CudaApi* cu, const umlos_comm_config& config);
  ~NcclComm();
  int world_size() const { return world_; }
  void all_gather(CUdeviceptr in, CUdeviceptr out, uint64_t bytes);
  void broadcast(CUdeviceptr data, uint64_t bytes, int root);
  void all_to_all(CUdeviceptr in, CUdeviceptr out, uint64_t block);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_ = 1;
};

}  // namespace cuda_driver
