// comm_gloo.cpp — Comm over Gloo (comm_gloo.hpp).
#include "comm_gloo.hpp"

#include <gloo/allgather.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <exception>

#include "cpu_reference.hpp"

namespace cpu_driver {

struct Comm::Impl {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::chrono::milliseconds timeout{60000};
  uint32_t tag = 0;  // one per collective, so a late message cannot match a later call
};

namespace {

// Gloo reports a dead peer, a timeout or a refused connection by throwing
// (gloo::IoException, gloo::EnforceNotMet): all of them mean the job cannot
// go on, so each becomes COLLECTIVE_FAILURE naming the collective.
template <class F>
void collective(const char* what, int rank, F&& body) {
  try {
    body();
  } catch (const DriverError&) {
    throw;
  } catch (const std::exception& e) {
    fail(UMLOS_COLLECTIVE_FAILURE,
         std::string(what) + " on rank " + std::to_string(rank) +
             " failed (a peer died, hung past the timeout or closed its connection): " + e.what());
  }
}

}  // namespace

Comm::Comm(const umlos_comm_config& config) : impl_(std::make_unique<Impl>()) {
  if (config.struct_size < UMLOS_COMM_CONFIG_SIZE_V1_7)
    fail(UMLOS_INVALID_ARGUMENT, "comm_init: umlos_comm_config of " + std::to_string(config.struct_size) + " bytes");
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size)
    fail(UMLOS_INVALID_ARGUMENT,
         "comm_init: rank " + std::to_string(config.rank) + " of world size " + std::to_string(config.world_size));
  const std::string rv = config.rendezvous ? config.rendezvous : "";
  if (rv.rfind("file:", 0) != 0 || rv.size() <= 5)
    fail(UMLOS_INVALID_ARGUMENT,
         "comm_init: rendezvous '" + rv + "', expected file:/DIR (a folder every rank reaches)");
  rank_ = config.rank;
  world_ = config.world_size;
  if (config.timeout_ms > 0) impl_->timeout = std::chrono::milliseconds(config.timeout_ms);
  collective("the rendezvous", rank_, [&] {
    gloo::transport::tcp::attr attr;
    if (config.listen_host && *config.listen_host) attr.hostname = config.listen_host;
    impl_->device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore files(rv.substr(5));
    gloo::rendezvous::PrefixStore store(config.prefix ? config.prefix : "umlos", files);
    impl_->context = std::make_shared<gloo::rendezvous::Context>(rank_, world_);
    impl_->context->setTimeout(impl_->timeout);
    impl_->context->connectFullMesh(store, impl_->device);
  });
}

Comm::~Comm() = default;

void Comm::all_gather(const void* in, void* out, uint64_t bytes) {
  collective("all_gather", rank_, [&] {
    gloo::AllgatherOptions opts(impl_->context);
    // Gloo's input is non-const by type only; it reads it.
    opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes * static_cast<uint64_t>(world_));
    opts.setTag(impl_->tag++);
    opts.setTimeout(impl_->timeout);
    gloo::allgather(opts);
  });
}

void Comm::broadcast(void* data, uint64_t bytes, int root) {
  if (root < 0 || root >= world_)
    fail(UMLOS_INVALID_ARGUMENT,
         "broadcast: root " + std::to_string(root) + " outside 0.." + std::to_string(world_ - 1));
  collective("broadcast", rank_, [&] {
    gloo::BroadcastOptions opts(impl_->context);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(impl_->tag++);
    opts.setTimeout(impl_->timeout);
    gloo::broadcast(opts);
  });
}

void Comm::all_to_all(const void* in, void* out, uint64_t block) {
  collective("all_to_all", rank_, [&] {
    gloo::AlltoallOptions opts(impl_->context);
    opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), block * static_cast<uint64_t>(world_));
    opts.setOutput(static_cast<uint8_t*>(out), block * static_cast<uint64_t>(world_));
    opts.setTag(impl_->tag++);
    opts.setTimeout(impl_->timeout);
    gloo::alltoall(opts);
  });
}

}  // namespace cpu_driver
