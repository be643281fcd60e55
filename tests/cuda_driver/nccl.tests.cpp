// nccl.tests.cpp — cuda_driver's collectives over the real NCCL library on
// a machine with one GPU: a communicator of one rank (NCCL accepts it; a
// job of two ranks needs two GPUs, tests/kernel/distributed.tests.cpp).
// It runs what a multi-rank job runs on each rank (libnccl.so.2 opened at
// run time, the unique id passed through the rendezvous folder,
// ncclCommInitRank, the three collectives waited for with the deadline) and
// checks the bytes each collective leaves. Where the machine has no GPU, or
// no libnccl.so.2 on the loader's path, it is reported skipped.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "../comm_support.hpp"
#include "../skip.hpp"
#include "cuda_driver_support.hpp"

namespace fs = std::filesystem;
using umlos::Host;
using umlos::TensorPtr;

namespace {

TensorPtr f32_tensor(Host& host, const std::vector<float>& values) {
  umlos_shape s{};
  s.rank = 1;
  s.dims[0] = static_cast<int64_t>(values.size());
  TensorPtr t = host.device().make_tensor(UMLOS_DTYPE_F32, s, false);
  host.device().write(*t, values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> read_f32(Host& host, const TensorPtr& t, size_t n) {
  std::vector<float> v(n);
  host.device().read(*t, v.data(), n * sizeof(float));
  return v;
}

}  // namespace

TEST_CASE("cuda_driver's NCCL collectives on a one-rank communicator leave the expected bytes",
          "[cuda_driver][gpu][nccl]") {
  std::string why;
  std::unique_ptr<Host> host = cuda_driver_test::start_cuda(&why);
  if (!host) {
    UMLOS_SKIP(why);
  }
  const fs::path rendezvous = fs::temp_directory_path() / ("umlos-nccl-" + std::to_string(::getpid()));
  fs::remove_all(rendezvous);
  fs::create_directories(rendezvous);
  const std::string rv = "file:" + rendezvous.string();
  try {
    host->device().join(umlos_test::one_rank_comm(rv, "nccltest", 20000));
  } catch (const umlos::Failure& f) {
    fs::remove_all(rendezvous);
    if (f.code() == UMLOS_UNAVAILABLE) {
      UMLOS_SKIP(f.what());
    }
    throw;
  }
  // Rank 0 left NCCL's unique id in the rendezvous, whole (128 bytes).
  struct stat st {};
  REQUIRE(::stat((rendezvous / "nccltest.nccl_id").c_str(), &st) == 0);
  CHECK(st.st_size == 128);

  std::vector<float> values(1 << 20);
  std::iota(values.begin(), values.end(), -5000.25f);
  const TensorPtr in = f32_tensor(*host, values);
  const TensorPtr out = f32_tensor(*host, std::vector<float>(values.size(), 0.0f));
  SECTION("all_gather of one rank copies its input") {
    host->device().all_gather(*in, *out);
    CHECK(read_f32(*host, out, values.size()) == values);
  }
  SECTION("all_to_all of one rank copies its single block") {
    host->device().all_to_all(*in, *out);
    CHECK(read_f32(*host, out, values.size()) == values);
  }
  SECTION("broadcast from rank 0 keeps the tensor, and a root out of range is refused") {
    TensorPtr t = f32_tensor(*host, values);
    host->device().broadcast(*t, 0);
    CHECK(read_f32(*host, t, values.size()) == values);
    try {
      host->device().broadcast(*t, 1);
      FAIL("broadcast from root 1 of a one-rank world was accepted");
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
    }
  }
  CHECK(host->device().collective_stats().calls >= 1);
  fs::remove_all(rendezvous);
}
