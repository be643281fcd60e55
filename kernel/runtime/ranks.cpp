// ranks.cpp — multi-rank kernel steps (ranks.hpp).
#include "ranks.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "error.hpp"
#include "host.hpp"

namespace umlos {

namespace fs = std::filesystem;

namespace {

std::string rendezvous_dir(const WorldOptions& world) {
  if (!world.joins() || world.rendezvous.rfind("file:", 0) != 0) return "";
  return world.rendezvous.substr(5);
}

// The notes' names: "<prefix>.failed.<rank>" (the prefix keeps jobs that
// share a folder apart).
std::string note_name(const WorldOptions& world, int32_t rank) {
  return world.prefix + ".failed." + std::to_string(rank);
}

umlos_shape bytes_shape(int64_t n) {
  umlos_shape s{};
  s.rank = 1;
  s.dims[0] = n;
  return s;
}

// Every rank must run rank 0's manifest: rank 0 broadcasts its manifest
// hash, and a rank holding another stops before the first iteration.
void agree_on_manifest(Host& host, const Manifest& manifest, const WorldOptions& world) {
  TensorPtr t = host.make_tensor(UMLOS_DTYPE_U8, bytes_shape(32), false);
  host.write(*t, manifest.manifest_hash.data(), 32);
  host.device().broadcast(*t, 0);
  Digest root{};
  host.read(*t, root.data(), 32);
  if (root != manifest.manifest_hash) {
    throw Failure(UMLOS_RANK_DIVERGENCE, "rank " + std::to_string(world.rank) + " runs manifest " + manifest.file +
                                             " with manifest_hash " + to_hex(manifest.manifest_hash) +
                                             " but rank 0's manifest_hash is " + to_hex(root) +
                                             " (every rank of a job runs the same manifest)");
  }
}

// A note's first line, read without trusting the folder: never through a
// link, never blocking (a FIFO planted there), only a regular file, at most
// 4 KiB. "" when there is none.
std::string read_note(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) text.assign(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text.substr(0, text.find('\n'));
}

}  // namespace

void join_world(Host& host, const Manifest& manifest, const WorldOptions& world) {
  if (world.size < 1 || world.rank < 0 || world.rank >= world.size) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "rank " + std::to_string(world.rank) + " of world size " +
                                              std::to_string(world.size) + ": expected 0 <= rank < world size");
  }
  if (world.joins()) {
    // A peer that dies closes its sockets; writing to one raises SIGPIPE,
    // whose default action would kill this rank without a failure record.
    // Ignored, the write fails with EPIPE and the collective reports
    // COLLECTIVE_FAILURE naming the lost rank.
    ::signal(SIGPIPE, SIG_IGN);
    umlos_comm_config c{};
    c.struct_size = sizeof(c);
    c.rank = world.rank;
    c.world_size = world.size;
    c.rendezvous = world.rendezvous.c_str();
    c.prefix = world.prefix.c_str();
    c.listen_host = world.listen_host.c_str();
    c.timeout_ms = world.timeout_ms;
    c.local_size = world.local_size;
    host.device().join(c);
    agree_on_manifest(host, manifest, world);
  }
  host.set_world(world.rank, world.size);
}

void check_ranks_agree(Host& host, const Digest& state_fp, int64_t t) {
  const int32_t w = host.world_size();
  if (!host.device().joined()) return;
  TensorPtr mine = host.make_tensor(UMLOS_DTYPE_U8, bytes_shape(32), false);
  TensorPtr every = host.make_tensor(UMLOS_DTYPE_U8, bytes_shape(32 * static_cast<int64_t>(w)), false);
  host.write(*mine, state_fp.data(), 32);
  host.device().all_gather(*mine, *every);
  std::vector<uint8_t> bytes(32 * static_cast<size_t>(w));
  host.read(*every, bytes.data(), bytes.size());
  Digest first{};
  std::copy(bytes.begin(), bytes.begin() + 32, first.begin());
  for (int32_t r = 1; r < w; ++r) {
    Digest d{};
    std::copy(bytes.begin() + 32 * r, bytes.begin() + 32 * (r + 1), d.begin());
    if (d != first) {
      throw Failure(UMLOS_RANK_DIVERGENCE, "at t=" + std::to_string(t) + " rank " + std::to_string(r) +
                                               " has state_fp " + to_hex(d) + " but rank 0 has " + to_hex(first) +
                                               " (the ranks no longer hold the same state)");
    }
  }
}

void note_rank_failure(const WorldOptions& world, int32_t rank, const std::string& line) {
  const std::string dir = rendezvous_dir(world);
  if (dir.empty()) return;
  // Written whole under a temporary name, then renamed: a reader never
  // sees half a note.
  const fs::path final_path = fs::path(dir) / note_name(world, rank);
  const fs::path tmp = fs::path(dir) / (note_name(world, rank) + ".tmp");
  std::string text = line.substr(0, 4000);
  for (char& ch : text)
    if (ch == '\n') ch = ' ';
  text += "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (ok) ::rename(tmp.c_str(), final_path.c_str());
}

std::string failed_ranks(const WorldOptions& world, int64_t wait_ms) {
  const std::string dir = rendezvous_dir(world);
  if (dir.empty()) return "";
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    std::string out, silent;
    bool cause = false;  // a note that is not just another lost peer
    for (int32_t r = 0; r < world.size; ++r) {
      if (r == world.rank) continue;
      const std::string line = read_note((fs::path(dir) / note_name(world, r)).string());
      if (line.empty()) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(r);
        continue;
      }
      out += (out.empty() ? "" : "; ") + line;
      if (line.find("COLLECTIVE_FAILURE") == std::string::npos) cause = true;
    }
    if (cause) return out;
    if (std::chrono::steady_clock::now() >= until) {
      // Every rank that stops says why; one that says nothing is hung or
      // cut off (a stopped process, a lost host).
      if (!silent.empty())
        out += (out.empty() ? "" : "; ") + std::string("no word from rank ") + silent + " (hung, or unreachable)";
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace umlos
