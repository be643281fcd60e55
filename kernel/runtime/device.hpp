// device.hpp — the run's active driver and the tensors on it: allocation
// under the run's memory budget (budgets.memory_bytes), reads and writes,
// views, and primitives dispatched directly by the kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "sha256.hpp"
#include "tensor.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"

namespace umlos {

class Device {
 public:
  // Creates an instance of driver `d` with `ctx` as its context (owned from
  // here on, also when create fails: the failure then propagates as a
  // Failure with the driver's message). Replaces any active driver.
  void start(const umlos_driver_desc* d, umlos_ctx* ctx, const umlos_services* services);
  // Drops the device's reference to the driver: the instance is destroyed
  // once its last tensor is gone.
  void stop() {
    driver_.reset();
    primitives_.clear();
  }

  bool active() const { return driver_ != nullptr; }
  const umlos_driver_desc* desc() const { return driver_ ? driver_->desc : nullptr; }
  void* instance() const { return driver_ ? driver_->instance : nullptr; }
  std::string description() const;
  Digest fingerprint() const;
  // Whether the active driver lists `primitive` (docs/primitives.md).
  bool has_primitive(const char* primitive) const;

  // A tensor in a new driver buffer. `check_budget`: held against the
  // memory budget first (QUOTA_EXCEEDED naming the key, the tensor, its
  // size and the budget).
  // `zeroed` false: its bytes are unspecified (the caller writes each before
  // reading it), on a driver that can allocate so (ABI 1.10); zeroed
  // otherwise.
  TensorPtr make_tensor(int32_t dtype, const umlos_shape& shape, bool check_budget = true, bool zeroed = true);
  // Whether make_tensor(..., zeroed = false) skips the zeroing: the active
  // driver allocates unspecified bytes (ABI 1.10 buffer_alloc_uninit).
  bool allocates_unzeroed() const;
  void write(Tensor& t, const void* src, uint64_t bytes, uint64_t offset = 0);
  void read(const Tensor& t, void* dst, uint64_t bytes, uint64_t offset = 0) const;
  // The tensor's bytes where the driver keeps them in host memory (ABI
  // 1.10 buffer_host_address), for reading in place between driver calls;
  // nullptr where it does not (then read()).
  const uint8_t* host_address(const Tensor& t) const;
  HostTensor to_host(const Tensor& t) const;
  TensorPtr from_host(const HostTensor& h);
  umlos_tensor_view view_of(const Tensor& t) const;
  // A typed view of bytes [byte_offset, byte_offset + size) of `base`.
  TensorPtr make_view(const TensorPtr& base, uint64_t byte_offset, int32_t dtype, const umlos_shape& shape);
  // Runs a primitive; errors become Failure with the driver's message.
  void dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs);

  // Multi-rank jobs (spec 004 0.R): join the job through the driver's
  // collectives (UNAVAILABLE when the driver has none), then all_gather /
  // broadcast over its tensors (COLLECTIVE_FAILURE when a rank is gone).
  void join(const umlos_comm_config& config);
  // Whether join() succeeded: this process is a rank of a job (of one rank,
  // too) and the collectives below may be called.
  bool joined() const { return joined_; }
  void all_gather(const Tensor& in, Tensor& out);
  void broadcast(Tensor& t, int32_t root);
  void all_to_all(const Tensor& in, Tensor& out);
  // What the collectives cost so far (umlos run --profile): calls, bytes
  // this rank sent, as the usual algorithms send them (a ring all-gather:
  // its input to W - 1 ranks; all-to-all: W - 1 of its W blocks; broadcast:
  // the root, its tensor to W - 1 ranks), and wall time inside the driver.
  struct CollectiveStats {
    uint64_t calls = 0, bytes_sent = 0, ns = 0;
  };
  const CollectiveStats& collective_stats() const { return collectives_; }

  // budgets.memory_bytes (0: none); `is_default`: the manifest gave none
  // (for messages).
  void set_memory_budget(uint64_t bytes, bool is_default) {
    memory_budget_ = bytes;
    memory_budget_is_default_ = is_default;
  }
  uint64_t memory_budget() const { return memory_budget_; }
  uint64_t held_bytes() const { return *held_bytes_; }

 private:
  std::shared_ptr<DriverInstance> driver_;
  // The active driver's primitive names (its descriptor's static strings):
  // every dispatch and value allocation asks, so a lookup, not a scan.
  std::unordered_set<std::string_view> primitives_;
  // Runs one collective call, adding its time and `sent` bytes to the stats.
  template <class Call>
  umlos_status timed(Call&& call, uint64_t sent) {
    const auto start = std::chrono::steady_clock::now();
    const umlos_status s = call();
    collectives_.ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    collectives_.calls += 1;
    collectives_.bytes_sent += sent;
    return s;
  }
  CollectiveStats collectives_;
  int32_t rank_ = 0, world_size_ = 1;  // set by join()
  bool joined_ = false;
  uint64_t memory_budget_ = 0;
  bool memory_budget_is_default_ = false;
  // Driver bytes held by live tensors; each tensor gives its bytes back when
  // it goes (~Tensor), so tensors share the counter.
  std::shared_ptr<std::atomic<uint64_t>> held_bytes_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace umlos
