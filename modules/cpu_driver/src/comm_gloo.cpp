// comm_gloo.cpp — Comm over Gloo (comm_gloo.hpp).
//
// Every pair of the mesh runs in Gloo's synchronous mode: the calling
// thread writes and reads the socket itself. In the default mode each
// message goes through Gloo's event-loop thread and a condition variable,
// and every such hand-off waits for the scheduler to wake a thread: an
// all-gather of 1 KiB between two processes took 247 us on average on the
// 2-core development machine, against 43 us in synchronous mode
// (bench/distributed/README.md).
//
// A synchronous write of a message larger than the socket buffers blocks
// until the peer reads. So every collective is a sequence of pairwise
// exchanges scheduled as a round-robin tournament (each rank meets every
// other once, one partner per round), and in each exchange the lower rank
// sends first and the higher rank receives first: no two ranks ever both
// wait to write to each other, whatever the message size.
#include "comm_gloo.hpp"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "cpu_reference.hpp"
#include "tcp_store.hpp"

namespace cpu_driver {

struct Comm::Impl {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::chrono::milliseconds timeout{60000};
  // Rank 0's TCP rendezvous store, serving the other ranks' reads until the
  // job ends (they may read rank 0's addresses after its mesh is up).
  std::unique_ptr<gloo::rendezvous::Store> store;
};

namespace {

// Gloo's store interface over the TCP rendezvous (rank 0 serves the keys).
class GlooTcpStore : public gloo::rendezvous::Store {
 public:
  GlooTcpStore(const std::string& host, const std::string& port, int rank, int world, std::chrono::milliseconds timeout)
      : tcp_(host, port, rank, world, timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override { tcp_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return tcp_.get(key); }
  void wait(const std::vector<std::string>& keys) override { tcp_.wait(keys, tcp_.timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    tcp_.wait(keys, timeout);
  }

 private:
  umlos::rendezvous::TcpStore tcp_;
};

// Gloo reports a dead peer, a timeout or a refused connection by throwing
// (gloo::IoException, gloo::EnforceNotMet): all of them mean the job cannot
// go on, so each becomes COLLECTIVE_FAILURE naming the collective.
template <class F>
void collective(const char* what, int rank, std::chrono::milliseconds timeout, F&& body) {
  try {
    body();
  } catch (const DriverError&) {
    throw;
  } catch (const std::exception& e) {
    fail(UMLOS_COLLECTIVE_FAILURE,
         std::string(what) + " on rank " + std::to_string(rank) + " failed (a peer died, did not answer within the " +
             std::to_string(timeout.count()) + " ms timeout, or closed its connection): " + e.what());
  }
}

// The partner of `rank` in round `round` of a round-robin tournament of
// `world` ranks (the circle method: n = world rounded up to even, n - 1
// rounds, rank n - 1 fixed), or -1 for a bye (odd worlds). Symmetric: the
// partner's partner is `rank`.
int partner(int rank, int round, int world) {
  const int n = world + (world & 1), m = n - 1;
  int p;
  if (rank == m) {
    p = 0;
    while ((2 * p) % m != round % m) ++p;  // the rank whose partner by the formula below is itself
  } else {
    p = ((round - rank) % m + m) % m;
    if (p == rank) p = m;
  }
  return p < world ? p : -1;
}

// exchange() without the peer in its failures.
void exchange_with(gloo::rendezvous::Context& ctx, int peer, int slot, const void* s, uint64_t sbytes, void* r,
                   uint64_t rbytes) {
  std::unique_ptr<gloo::transport::Pair>& pair = ctx.getPair(peer);
  // Gloo's send side takes a non-const pointer by type only; it reads it.
  std::unique_ptr<gloo::transport::Buffer> out =
      sbytes ? pair->createSendBuffer(slot, const_cast<void*>(s), sbytes) : nullptr;
  std::unique_ptr<gloo::transport::Buffer> in = rbytes ? pair->createRecvBuffer(slot, r, rbytes) : nullptr;
  auto send = [&] {
    if (!out) return;
    out->send();
    out->waitSend();
  };
  auto receive = [&] {
    if (in) in->waitRecv();
  };
  if (ctx.rank < peer) {
    send();
    receive();
  } else {
    receive();
    send();
  }
}

// Sends `sbytes` at `s` to `peer` and receives `rbytes` into `r` from it,
// on message slot `slot`; the lower rank sends first. A failure names the
// peer: Gloo's own message names only its address.
void exchange(gloo::rendezvous::Context& ctx, int peer, int slot, const void* s, uint64_t sbytes, void* r,
              uint64_t rbytes) {
  try {
    exchange_with(ctx, peer, slot, s, sbytes, r, rbytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("the exchange with rank " + std::to_string(peer) + ": " + e.what());
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
  std::string host, port;
  const bool tcp = umlos::rendezvous::parse_tcp_rendezvous(rv, &host, &port);
  if (!tcp && (rv.rfind("file:", 0) != 0 || rv.size() <= 5))
    fail(UMLOS_INVALID_ARGUMENT, "comm_init: rendezvous '" + rv +
                                     "', expected file:/DIR (a folder every rank reaches) or tcp://HOST:PORT (rank "
                                     "0's address and a port free there, as MASTER_ADDR and MASTER_PORT give them)");
  rank_ = config.rank;
  world_ = config.world_size;
  if (config.timeout_ms > 0) impl_->timeout = std::chrono::milliseconds(config.timeout_ms);
  collective("the rendezvous", rank_, impl_->timeout, [&] {
    gloo::transport::tcp::attr attr;
    if (config.listen_host && *config.listen_host) attr.hostname = config.listen_host;
    impl_->device = gloo::transport::tcp::CreateDevice(attr);
    std::unique_ptr<gloo::rendezvous::Store> base;
    if (tcp)
      base = std::make_unique<GlooTcpStore>(host, port, rank_, world_, impl_->timeout);
    else
      base = std::make_unique<gloo::rendezvous::FileStore>(rv.substr(5));
    gloo::rendezvous::PrefixStore store(config.prefix ? config.prefix : "umlos", *base);
    impl_->context = std::make_shared<gloo::rendezvous::Context>(rank_, world_);
    impl_->context->setTimeout(impl_->timeout);
    impl_->context->connectFullMesh(store, impl_->device);
    if (tcp && rank_ == 0) impl_->store = std::move(base);
    for (int p = 0; p < world_; ++p)
      if (p != rank_) impl_->context->getPair(p)->setSync(true, false);  // no busy polling: ranks may share cores
  });
}

Comm::~Comm() = default;

void Comm::all_gather(const void* in, void* out, uint64_t bytes) {
  collective("all_gather", rank_, impl_->timeout, [&] {
    auto* o = static_cast<uint8_t*>(out);
    if (bytes) std::memmove(o + static_cast<uint64_t>(rank_) * bytes, in, bytes);
    gloo::rendezvous::Context& ctx = *impl_->context;
    const int rounds = world_ + (world_ & 1) - 1, slot = ctx.nextSlot(rounds);
    for (int round = 0; round < rounds; ++round) {
      const int p = partner(rank_, round, world_);
      if (p >= 0) exchange(ctx, p, slot + round, in, bytes, o + static_cast<uint64_t>(p) * bytes, bytes);
    }
  });
}

void Comm::broadcast(void* data, uint64_t bytes, int root) {
  if (root < 0 || root >= world_)
    fail(UMLOS_INVALID_ARGUMENT,
         "broadcast: root " + std::to_string(root) + " outside 0.." + std::to_string(world_ - 1));
  collective("broadcast", rank_, impl_->timeout, [&] {
    gloo::rendezvous::Context& ctx = *impl_->context;
    const int slot = ctx.nextSlot(1);
    if (rank_ == root) {
      for (int p = 0; p < world_; ++p)
        if (p != root) exchange(ctx, p, slot, data, bytes, nullptr, 0);
    } else {
      exchange(ctx, root, slot, nullptr, 0, data, bytes);
    }
  });
}

void Comm::all_to_all(const void* in, void* out, uint64_t block) {
  collective("all_to_all", rank_, impl_->timeout, [&] {
    const auto* i = static_cast<const uint8_t*>(in);
    auto* o = static_cast<uint8_t*>(out);
    const uint64_t own = static_cast<uint64_t>(rank_) * block;
    if (block) std::memmove(o + own, i + own, block);
    gloo::rendezvous::Context& ctx = *impl_->context;
    const int rounds = world_ + (world_ & 1) - 1, slot = ctx.nextSlot(rounds);
    for (int round = 0; round < rounds; ++round) {
      const int p = partner(rank_, round, world_);
      if (p < 0) continue;
      const uint64_t at = static_cast<uint64_t>(p) * block;
      exchange(ctx, p, slot + round, i + at, block, o + at, block);
    }
  });
}

}  // namespace cpu_driver
