// comm_nccl.cpp — NcclComm (comm_nccl.hpp).
#include "comm_nccl.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cpu_reference.hpp"
#include "tcp_store.hpp"

namespace cuda_driver {

using cpu_driver::fail;

namespace {

// The part of nccl.h used here, ABI-identical (NCCL 2.x): the unique id is
// 128 opaque bytes, results and data types are ints, a communicator is a
// pointer, a stream is the driver's CUstream.
struct NcclUniqueId {
  char internal[128];
};
typedef struct NcclComm_st* NcclCommHandle;
typedef int NcclResult;
constexpr NcclResult kNcclSuccess = 0;
constexpr NcclResult kNcclInProgress = 7;
constexpr int kNcclUint8 = 1;

struct NcclApi {
  NcclResult (*GetUniqueId)(NcclUniqueId*) = nullptr;
  NcclResult (*CommInitRank)(NcclCommHandle*, int, NcclUniqueId, int) = nullptr;
  NcclResult (*CommDestroy)(NcclCommHandle) = nullptr;
  NcclResult (*CommAbort)(NcclCommHandle) = nullptr;
  NcclResult (*CommGetAsyncError)(NcclCommHandle, NcclResult*) = nullptr;
  NcclResult (*AllGather)(const void*, void*, size_t, int, NcclCommHandle, CUstream) = nullptr;
  NcclResult (*Broadcast)(const void*, void*, size_t, int, int, NcclCommHandle, CUstream) = nullptr;
  NcclResult (*Send)(const void*, size_t, int, int, NcclCommHandle, CUstream) = nullptr;
  NcclResult (*Recv)(void*, size_t, int, int, NcclCommHandle, CUstream) = nullptr;
  NcclResult (*GroupStart)() = nullptr;
  NcclResult (*GroupEnd)() = nullptr;
  const char* (*GetErrorString)(NcclResult) = nullptr;
};

// libnccl.so.2, opened once per process and never closed (as libcuda).
const NcclApi* load_nccl() {
  static std::once_flag once;
  static NcclApi api;
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    void* h = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = ::dlerror();
      error = std::string("libnccl.so.2 not found: NCCL is not installed (dlopen: ") + (why ? why : "?") + ")";
      return;
    }
    auto sym = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn && error.empty()) error = std::string("libnccl.so.2 lacks ") + name;
    };
    sym("ncclGetUniqueId", api.GetUniqueId);
    sym("ncclCommInitRank", api.CommInitRank);
    sym("ncclCommDestroy", api.CommDestroy);
    sym("ncclCommAbort", api.CommAbort);
    sym("ncclCommGetAsyncError", api.CommGetAsyncError);
    sym("ncclAllGather", api.AllGather);
    sym("ncclBroadcast", api.Broadcast);
    sym("ncclSend", api.Send);
    sym("ncclRecv", api.Recv);
    sym("ncclGroupStart", api.GroupStart);
    sym("ncclGroupEnd", api.GroupEnd);
    sym("ncclGetErrorString", api.GetErrorString);
    ok = error.empty();
  });
  if (!ok) fail(UMLOS_UNAVAILABLE, "comm_init: " + error);
  return &api;
}

std::string id_path(const umlos_comm_config& c) {
  return std::string(c.rendezvous + 5) + "/" + (c.prefix ? c.prefix : "umlos") + ".nccl_id";
}

void write_id(const std::string& path, const NcclUniqueId& id) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail(UMLOS_COLLECTIVE_FAILURE, "comm_init: cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok = ::write(fd, &id, sizeof id) == static_cast<ssize_t>(sizeof id) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    fail(UMLOS_COLLECTIVE_FAILURE, "comm_init: cannot write " + path + ": " + std::strerror(errno));
}

// Rank 0's id once it is there: a regular file of exactly 128 bytes, never
// through a link, never blocking on a FIFO.
bool read_id(const std::string& path, NcclUniqueId* id) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == static_cast<off_t>(sizeof *id) &&
            ::read(fd, id, sizeof *id) == static_cast<ssize_t>(sizeof *id);
  ::close(fd);
  return ok;
}

}  // namespace

struct NcclComm::Impl {
  const CudaApi* cu = nullptr;
  const NcclApi* nccl = nullptr;
  NcclCommHandle comm = nullptr;
  std::chrono::milliseconds timeout{30000};
  bool aborted = false;

  void check(NcclResult r, const char* what) {
    if (r == kNcclSuccess || r == kNcclInProgress) return;
    fail(UMLOS_COLLECTIVE_FAILURE,
         std::string(what) + " failed: " + (nccl->GetErrorString ? nccl->GetErrorString(r) : "?"));
  }
  // Waits for the stream with a deadline; a peer error or the deadline
  // aborts the communicator (NCCL would otherwise wait forever).
  void wait(const char* what) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const CUresult q = cu->cuStreamQuery(nullptr);
      if (q == CUDA_SUCCESS) return;
      constexpr CUresult kNotReady = 600;
      if (q != kNotReady) fail(UMLOS_COLLECTIVE_FAILURE, cu->describe_error(what, q));
      NcclResult async = kNcclSuccess;
      nccl->CommGetAsyncError(comm, &async);
      const bool late = std::chrono::steady_clock::now() >= until;
      if ((async != kNcclSuccess && async != kNcclInProgress) || late) {
        nccl->CommAbort(comm);
        aborted = true;
        fail(UMLOS_COLLECTIVE_FAILURE, std::string(what) +
                                           (late ? " timed out after " + std::to_string(timeout.count()) + " ms"
                                                 : std::string(" failed: ") + nccl->GetErrorString(async)) +
                                           " (a peer died, hung past the timeout or lost its connection)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

NcclComm::NcclComm(const CudaApi* cu, const umlos_comm_config& config) : impl_(std::make_unique<Impl>()) {
  if (config.struct_size < UMLOS_COMM_CONFIG_SIZE_V1_7 || config.world_size < 1 || config.rank < 0 ||
      config.rank >= config.world_size)
    fail(UMLOS_INVALID_ARGUMENT, "comm_init: malformed umlos_comm_config");
  std::string host, port;
  const bool tcp = config.rendezvous && umlos::rendezvous::parse_tcp_rendezvous(config.rendezvous, &host, &port);
  if (!tcp && (!config.rendezvous || std::strncmp(config.rendezvous, "file:", 5) != 0 || !config.rendezvous[5]))
    fail(UMLOS_INVALID_ARGUMENT, "comm_init: rendezvous must be file:/DIR or tcp://HOST:PORT");
  impl_->cu = cu;
  impl_->nccl = load_nccl();
  if (config.timeout_ms > 0) impl_->timeout = std::chrono::milliseconds(config.timeout_ms);
  rank_ = config.rank;
  world_ = config.world_size;
  NcclUniqueId id{};
  // Through rank 0's TCP store: kept until ncclCommInitRank returns, which
  // it does on rank 0 only once every rank has the id and has joined.
  std::unique_ptr<umlos::rendezvous::TcpStore> store;
  if (tcp) {
    const std::string key = std::string(config.prefix ? config.prefix : "umlos") + ".nccl_id";
    try {
      store = std::make_unique<umlos::rendezvous::TcpStore>(host, port, rank_, world_, impl_->timeout);
      if (rank_ == 0) {
        impl_->check(impl_->nccl->GetUniqueId(&id), "ncclGetUniqueId");
        store->set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
      } else {
        const std::vector<char> got = store->get(key);
        if (got.size() != sizeof id.internal)
          fail(UMLOS_COLLECTIVE_FAILURE, "comm_init: rank 0's NCCL id is " + std::to_string(got.size()) +
                                             " bytes at the rendezvous, expected " +
                                             std::to_string(sizeof id.internal));
        std::memcpy(id.internal, got.data(), got.size());
      }
    } catch (const std::runtime_error& e) {
      fail(UMLOS_COLLECTIVE_FAILURE, std::string("comm_init: ") + e.what());
    }
    impl_->check(impl_->nccl->CommInitRank(&impl_->comm, world_, id, rank_), "ncclCommInitRank");
    return;
  }
  const std::string path = id_path(config);
  if (rank_ == 0) {
    impl_->check(impl_->nccl->GetUniqueId(&id), "ncclGetUniqueId");
    write_id(path, id);
  } else {
    const auto until = std::chrono::steady_clock::now() + impl_->timeout;
    while (!read_id(path, &id)) {
      if (std::chrono::steady_clock::now() >= until)
        fail(UMLOS_COLLECTIVE_FAILURE, "comm_init: no NCCL id from rank 0 at " + path + " within the timeout");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  impl_->check(impl_->nccl->CommInitRank(&impl_->comm, world_, id, rank_), "ncclCommInitRank");
}

NcclComm::~NcclComm() {
  if (impl_ && impl_->comm && !impl_->aborted) impl_->nccl->CommDestroy(impl_->comm);
}

void NcclComm::all_gather(CUdeviceptr in, CUdeviceptr out, uint64_t bytes) {
  impl_->check(impl_->nccl->AllGather(reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), bytes,
                                      kNcclUint8, impl_->comm, nullptr),
               "ncclAllGather");
  impl_->wait("ncclAllGather");
}

void NcclComm::broadcast(CUdeviceptr data, uint64_t bytes, int root) {
  if (root < 0 || root >= world_) fail(UMLOS_INVALID_ARGUMENT, "broadcast: root out of range");
  void* p = reinterpret_cast<void*>(data);
  impl_->check(impl_->nccl->Broadcast(p, p, bytes, kNcclUint8, root, impl_->comm, nullptr), "ncclBroadcast");
  impl_->wait("ncclBroadcast");
}

void NcclComm::all_to_all(CUdeviceptr in, CUdeviceptr out, uint64_t block) {
  impl_->check(impl_->nccl->GroupStart(), "ncclGroupStart");
  for (int r = 0; r < world_; ++r) {
    impl_->check(impl_->nccl->Send(reinterpret_cast<const void*>(in + block * static_cast<uint64_t>(r)), block,
                                   kNcclUint8, r, impl_->comm, nullptr),
                 "ncclSend");
    impl_->check(impl_->nccl->Recv(reinterpret_cast<void*>(out + block * static_cast<uint64_t>(r)), block, kNcclUint8,
                                   r, impl_->comm, nullptr),
                 "ncclRecv");
  }
  impl_->check(impl_->nccl->GroupEnd(), "ncclGroupEnd");
  impl_->wait("all_to_all (ncclSend/ncclRecv)");
}

}  // namespace cuda_driver
