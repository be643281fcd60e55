// tape.cpp — WriteTape_v1: the event tape, its digest chain and its reader.
#include "tape.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "error.hpp"
#include "fsutil.hpp"

namespace umlos {
namespace {

constexpr char kHeaderMagic[8] = {'U', 'M', 'L', 'T', 'A', 'P', 'E', '1'};
constexpr char kEventMagic[4] = {'U', 'T', 'E', 'V'};
constexpr uint64_t kBlockBytes = kTapeBlockSize * kTapeEventBytes;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

uint32_t crc_of(const uint8_t* p, size_t n) { return static_cast<uint32_t>(::crc32(0L, p, static_cast<uInt>(n))); }

std::vector<uint8_t> header_bytes() {
  std::vector<uint8_t> h(kTapeHeaderBytes);
  std::memcpy(h.data(), kHeaderMagic, 8);
  put_u32(h.data() + 8, static_cast<uint32_t>(kTapeBlockSize));
  put_u32(h.data() + 12, static_cast<uint32_t>(kTapeEventBytes));
  return h;
}

Digest chain_step(const Digest& prev, const uint8_t* data, size_t n) {
  Sha256 h;
  h.update(prev);
  h.update(data, n);
  return h.finish();
}

Digest final_digest(const Digest& chain, const std::vector<uint8_t>& pending) {
  if (pending.empty()) return chain;
  return chain_step(chain, pending.data(), pending.size());
}

// The folder of `path`, open, and the last component: the path-taking
// TapeWriter functions work relative to it like the run's own calls.
struct FolderFd {
  int fd = -1;
  std::string name;
  explicit FolderFd(const std::string& path) {
    const auto slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    name = slash == std::string::npos ? path : path.substr(slash + 1);
    fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw Failure(UMLOS_IO_ERROR, "cannot open folder '" + folder + "': " + std::strerror(errno));
  }
  ~FolderFd() { ::close(fd); }
  FolderFd(const FolderFd&) = delete;
  FolderFd& operator=(const FolderFd&) = delete;
};

std::string hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

}  // namespace

Digest tape_chain_start() { return sha256(std::string_view("UML_OS.IO.WriteTape_v1")); }

std::vector<uint8_t> encode_tape_event(const TapeEvent& e) {
  std::vector<uint8_t> b(kTapeEventBytes, 0);
  std::memcpy(b.data(), kEventMagic, 4);
  put_u64(b.data() + 4, static_cast<uint64_t>(e.t));
  b[12] = e.action;
  b[13] = e.state;
  b[14] = e.loss_total ? 1 : 0;
  uint64_t bits = 0;
  if (e.loss_total) std::memcpy(&bits, &*e.loss_total, 8);
  put_u64(b.data() + 16, bits);
  std::memcpy(b.data() + 24, e.state_fp.data(), 32);
  put_u32(b.data() + 60, crc_of(b.data(), 60));
  return b;
}

TapeWriter::~TapeWriter() {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

void TapeWriter::write_bytes(const void* data, size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) {
    throw Failure(UMLOS_IO_ERROR, "writing tape '" + path_ + "' failed: " + std::strerror(errno));
  }
}

void TapeWriter::sync() {
  if (!file_) return;
  if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0) {
    throw Failure(UMLOS_IO_ERROR, "syncing tape '" + path_ + "' failed: " + std::strerror(errno));
  }
}

void TapeWriter::open(const std::string& path) {
  FolderFd dir(path);
  open(dir.fd, dir.name, path);
}

void TapeWriter::open(int dir_fd, const std::string& name, const std::string& label) {
  close();
  path_ = label;
  // A new tape is a new file: never one found in the folder, never the
  // target of a link planted under its name.
  const int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Failure(err == EEXIST ? UMLOS_ALREADY_EXISTS : UMLOS_IO_ERROR,
                  "cannot create tape '" + label + "': " + std::strerror(err) +
                      (err == EEXIST ? " (a new tape never reuses a file, nor writes through a link)" : ""));
  }
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int err = errno;
    ::close(fd);
    throw Failure(UMLOS_IO_ERROR, "cannot create tape '" + label + "': " + std::strerror(err));
  }
  events_ = 0;
  chain_ = tape_chain_start();
  pending_.clear();
  std::vector<uint8_t> h = header_bytes();
  write_bytes(h.data(), h.size());
}

void TapeWriter::resume(const std::string& path, const TapeState& state) {
  FolderFd dir(path);
  resume(dir.fd, dir.name, path, state);
}

void TapeWriter::resume(int dir_fd, const std::string& name, const std::string& path, const TapeState& state) {
  close();
  auto refuse = [&](const std::string& field, const std::string& expected, const std::string& actual) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "tape '" + path + "' does not continue the checkpoint: field 'tape." +
                                                field + "': checkpoint has " + expected + ", the tape file has " +
                                                actual);
  };
  const uint64_t want_bytes = kTapeHeaderBytes + state.events * kTapeEventBytes;
  if (state.file_bytes != want_bytes) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint tape state: field 'tape.file_bytes': expected " +
                                                std::to_string(want_bytes) + " (16 + 64 x " +
                                                std::to_string(state.events) + " events), found " +
                                                std::to_string(state.file_bytes));
  }
  if (state.pending.size() != (state.events % kTapeBlockSize) * kTapeEventBytes) {
    throw Failure(UMLOS_CHECKPOINT_INVALID, "checkpoint tape state: field 'tape.pending': expected " +
                                                std::to_string((state.events % kTapeBlockSize) * kTapeEventBytes) +
                                                " bytes, found " + std::to_string(state.pending.size()));
  }
  // Opened once, never through a link; read, checked and cut back through
  // the same descriptor. Bytes past the checkpoint (a record cut short by
  // a crash or a full disk included) are what the truncation removes.
  const int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Failure(err == ENOENT  ? UMLOS_NOT_FOUND
                  : err == ELOOP ? UMLOS_NAMESPACE_VIOLATION
                                 : UMLOS_IO_ERROR,
                  "cannot open tape '" + path + "': " + std::strerror(err) +
                      (err == ELOOP ? " (a symbolic link: a run never writes through a link)" : ""));
  }
  struct FdGuard {
    int fd;
    ~FdGuard() {
      if (fd >= 0) ::close(fd);
    }
  } guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Failure(UMLOS_NAMESPACE_VIOLATION, "tape '" + path + "' is not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::vector<uint8_t> bytes(
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), state.file_bytes)));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Failure(UMLOS_IO_ERROR, "cannot read tape '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  if (bytes.size() < state.file_bytes) {
    refuse("file_bytes", "at least " + std::to_string(state.file_bytes) + " bytes",
           std::to_string(bytes.size()) + " bytes");
  }
  if (!std::equal(bytes.begin(), bytes.begin() + kTapeHeaderBytes, header_bytes().begin())) {
    refuse("header", "the UMLTAPE1 header (block 512, event 64)", "another header");
  }
  Digest chain = tape_chain_start();
  const uint64_t full_blocks = state.events / kTapeBlockSize;
  for (uint64_t k = 0; k < full_blocks; ++k) {
    chain = chain_step(chain, bytes.data() + kTapeHeaderBytes + k * kBlockBytes, kBlockBytes);
  }
  if (chain != state.chain) {
    refuse("chain_digest", to_hex(state.chain),
           to_hex(chain) + " over its first " + std::to_string(full_blocks) + " blocks");
  }
  const uint8_t* tail = bytes.data() + kTapeHeaderBytes + full_blocks * kBlockBytes;
  if (!std::equal(state.pending.begin(), state.pending.end(), tail)) {
    refuse("pending",
           "the " + std::to_string(state.pending.size() / kTapeEventBytes) + " events of block " +
               std::to_string(full_blocks),
           "other bytes there");
  }
  if (::ftruncate(fd, static_cast<off_t>(state.file_bytes)) != 0 || ::fsync(fd) != 0) {
    throw Failure(UMLOS_IO_ERROR, "cannot truncate tape '" + path + "': " + std::strerror(errno));
  }
  if (::lseek(fd, static_cast<off_t>(state.file_bytes), SEEK_SET) < 0) {
    throw Failure(UMLOS_IO_ERROR, "cannot seek in tape '" + path + "': " + std::strerror(errno));
  }
  path_ = path;
  file_ = ::fdopen(fd, "wb");  // fdopen never truncates
  if (!file_) throw Failure(UMLOS_IO_ERROR, "cannot open tape '" + path + "': " + std::strerror(errno));
  guard.fd = -1;
  events_ = state.events;
  chain_ = state.chain;
  pending_ = state.pending;
}

void TapeWriter::append(const TapeEvent& e) {
  if (!file_) throw Failure(UMLOS_FAILED_PRECONDITION, "tape: append before open");
  if (events_ >= kTapeMaxEvents) {
    throw Failure(UMLOS_TAPE_OVERFLOW, "tape '" + path_ + "': the event of t=" + std::to_string(e.t) +
                                           " would be event " + std::to_string(events_ + 1) +
                                           "; WriteTape_v1 max_events is " + std::to_string(kTapeMaxEvents));
  }
  if (e.t != static_cast<int64_t>(events_) + 1) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "tape '" + path_ + "': event " + std::to_string(events_) +
                                              " must belong to t=" + std::to_string(events_ + 1) +
                                              ", found t=" + std::to_string(e.t));
  }
  if (e.action > 3 || e.state > 1) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "tape '" + path_ + "': event of t=" + std::to_string(e.t) + " has action " +
                                              std::to_string(e.action) + " (0..3) and state " +
                                              std::to_string(e.state) + " (0..1)");
  }
  std::vector<uint8_t> b = encode_tape_event(e);
  write_bytes(b.data(), b.size());
  pending_.insert(pending_.end(), b.begin(), b.end());
  ++events_;
  if (pending_.size() == kBlockBytes) {
    chain_ = chain_step(chain_, pending_.data(), pending_.size());
    pending_.clear();
    if (std::fflush(file_) != 0) {
      throw Failure(UMLOS_IO_ERROR, "writing tape '" + path_ + "' failed: " + std::strerror(errno));
    }
  }
}

TapeState TapeWriter::state() {
  sync();
  TapeState s;
  s.events = events_;
  s.chain = chain_;
  s.pending = pending_;
  s.file_bytes = kTapeHeaderBytes + events_ * kTapeEventBytes;
  return s;
}

Digest TapeWriter::digest() const { return final_digest(chain_, pending_); }

Digest TapeWriter::close() {
  if (file_) {
    sync();
    std::fclose(file_);
    file_ = nullptr;
  }
  return digest();
}

TapeContents read_tape(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  auto bad = [&](const std::string& what) { throw Failure(UMLOS_DATA_LOSS, "tape '" + path + "': " + what); };
  if (bytes.size() < kTapeHeaderBytes) {
    bad("field 'header': expected 16 bytes, the file has " + std::to_string(bytes.size()));
  }
  if (std::memcmp(bytes.data(), kHeaderMagic, 8) != 0) {
    bad("field 'header.magic': expected \"UMLTAPE1\", found \"" +
        std::string(reinterpret_cast<const char*>(bytes.data()), 8) + "\"");
  }
  if (get_u32(bytes.data() + 8) != kTapeBlockSize) {
    bad("field 'header.block_size': expected 512, found " + std::to_string(get_u32(bytes.data() + 8)));
  }
  if (get_u32(bytes.data() + 12) != kTapeEventBytes) {
    bad("field 'header.event_size': expected 64, found " + std::to_string(get_u32(bytes.data() + 12)));
  }
  const uint64_t body = bytes.size() - kTapeHeaderBytes;
  if (body % kTapeEventBytes != 0) {
    bad("framing: " + std::to_string(body) + " bytes after the header is not a whole number of 64-byte events (" +
        std::to_string(body / kTapeEventBytes) + " events and " + std::to_string(body % kTapeEventBytes) +
        " bytes: truncated or corrupt)");
  }
  const uint64_t n = body / kTapeEventBytes;
  if (n > kTapeMaxEvents) {
    bad("field 'events': at most " + std::to_string(kTapeMaxEvents) + ", found " + std::to_string(n));
  }
  TapeContents out;
  out.events.reserve(n);
  Digest chain = tape_chain_start();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t off = kTapeHeaderBytes + i * kTapeEventBytes;
    const uint8_t* p = bytes.data() + off;
    const std::string where = "event " + std::to_string(i) + " (byte " + std::to_string(off) + "): field '";
    if (std::memcmp(p, kEventMagic, 4) != 0) bad(where + "magic': expected \"UTEV\", found other bytes");
    const uint32_t crc = get_u32(p + 60), want = crc_of(p, 60);
    if (crc != want) bad(where + "crc32': expected " + hex8(want) + ", found " + hex8(crc));
    TapeEvent e;
    e.t = static_cast<int64_t>(get_u64(p + 4));
    if (e.t != static_cast<int64_t>(i) + 1) {
      bad(where + "t': expected " + std::to_string(i + 1) + ", found " + std::to_string(e.t));
    }
    e.action = p[12];
    e.state = p[13];
    if (e.action > 3) bad(where + "action': expected 0..3, found " + std::to_string(e.action));
    if (e.state > 1) bad(where + "state': expected 0..1, found " + std::to_string(e.state));
    if (p[14] > 1) bad(where + "flags': expected 0 or 1, found " + std::to_string(p[14]));
    if (p[15] != 0 || get_u32(p + 56) != 0) bad(where + "reserved': expected zero bytes");
    uint64_t bits = get_u64(p + 16);
    if (p[14] & 1) {
      double v;
      std::memcpy(&v, &bits, 8);
      e.loss_total = v;
    } else if (bits != 0) {
      bad(where + "loss_total': expected 0 bits when absent, found " + std::to_string(bits));
    }
    std::memcpy(e.state_fp.data(), p + 24, 32);
    out.events.push_back(e);
    if ((i + 1) % kTapeBlockSize == 0) {
      chain =
          chain_step(chain, bytes.data() + kTapeHeaderBytes + (i + 1 - kTapeBlockSize) * kTapeEventBytes, kBlockBytes);
      ++out.blocks;
    }
  }
  const uint64_t done = out.blocks * kBlockBytes;
  std::vector<uint8_t> pending(bytes.begin() + kTapeHeaderBytes + done, bytes.end());
  out.digest = final_digest(chain, pending);
  return out;
}

}  // namespace umlos
