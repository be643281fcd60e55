// gloo_modes — the latency of one Gloo all-gather between two processes on
// this machine, in Gloo's default mode (each message handed between Gloo's
// event-loop thread and the caller through a condition variable) and in
// its synchronous mode (the caller reads and writes the socket itself),
// which cpu_driver's collectives use (docs/distributed.md). The process
// forks its peer before it starts any thread; both meet through a Gloo
// FileStore in a fresh temporary folder.
//
// Usage: umlos_bench_gloo_modes [iterations=300] [bytes...=1024 307200 1572864]
#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Result {
  double mean_us, median_us;
};

// One mode, one size: `iters` all-gathers after 10 for warm-up.
Result run(int rank, const std::string& dir, bool sync, size_t bytes, int iters) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  ctx->connectFullMesh(store, device);
  if (sync) ctx->getPair(1 - rank)->setSync(true, false);
  std::vector<uint8_t> in(bytes, static_cast<uint8_t>(rank)), out(2 * bytes);
  std::vector<double> t;
  for (int i = 0; i < iters + 10; ++i) {
    const double t0 = now();
    if (sync) {
      gloo::AllgatherRing<uint8_t> a(ctx, {in.data()}, out.data(), static_cast<int>(bytes));
      a.run();
    } else {
      gloo::AllgatherOptions o(ctx);
      o.setInput(in.data(), bytes);
      o.setOutput(out.data(), 2 * bytes);
      o.setTag(static_cast<uint32_t>(i));
      gloo::allgather(o);
    }
    if (i >= 10) t.push_back(1e6 * (now() - t0));
  }
  double sum = 0;
  for (double x : t) sum += x;
  std::sort(t.begin(), t.end());
  return {sum / static_cast<double>(t.size()), t[t.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 300;
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(static_cast<size_t>(std::atoll(argv[i])));
  if (sizes.empty()) sizes = {1024, 307200, 1572864};
  char tmpl[] = "/tmp/umlos-gloo-modes-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string root = tmpl;
  const pid_t peer = ::fork();
  if (peer < 0) return 1;
  const int rank = peer == 0 ? 1 : 0;
  if (rank == 0)
    std::printf(
        "| bytes per rank | default mode: mean us | median us | synchronous: mean us | median us "
        "|\n|---:|---:|---:|---:|---:|\n");
  int k = 0;
  for (size_t bytes : sizes) {
    Result r[2];
    for (int sync = 0; sync < 2; ++sync) {
      const std::string dir = root + "/" + std::to_string(k++);
      std::filesystem::create_directories(dir);
      r[sync] = run(rank, dir, sync != 0, bytes, iters);
    }
    if (rank == 0)
      std::printf("| %zu | %.1f | %.1f | %.1f | %.1f |\n", bytes, r[0].mean_us, r[0].median_us, r[1].mean_us,
                  r[1].median_us);
  }
  if (rank == 1) std::_Exit(0);
  int status = 0;
  ::waitpid(peer, &status, 0);
  std::filesystem::remove_all(root);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
