// fsutil.cpp — whole-file reads and crash-safe (atomic) writes, POSIX only.
#include "fsutil.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <zlib.h>

#include "error.hpp"

namespace umlos {

namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err) {
  throw Failure(UMLOS_IO_ERROR, what + " '" + path + "': " + std::strerror(err));
}

// Closes a descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error (close can report deferred write errors).
  int close_now() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

std::string parent_folder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail_io("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_io("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) fail_io("cannot read", path, EISDIR);
  std::vector<uint8_t> out;
  // The size is a hint only: the file may be a pipe or change while we read.
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_io("cannot read", path, errno);
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

std::string read_text_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

void write_file_atomic_at(int dir_fd, const std::string& name, const std::string& label, const void* data,
                          size_t size) {
  // The temporary file is created exclusively and never through a link: a
  // file or symbolic link planted under its name makes the write fail
  // instead of writing where the link points. A leftover of a killed
  // process of the same pid (pids are reused) is a plain stale file of
  // ours: removed once (unlink removes a link, never its target), then the
  // exclusive create is tried again.
  const std::string tmp = name + ".tmp." + std::to_string(::getpid());
  const std::string tmp_label = label + ".tmp." + std::to_string(::getpid());
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int raw = ::openat(dir_fd, tmp.c_str(), kFlags, 0644);
  if (raw < 0 && errno == EEXIST && ::unlinkat(dir_fd, tmp.c_str(), 0) == 0) {
    raw = ::openat(dir_fd, tmp.c_str(), kFlags, 0644);
  }
  {
    Fd fd(raw);
    if (fd.get() < 0) fail_io("cannot create", tmp_label, errno);
    const auto* p = static_cast<const uint8_t*>(data);
    size_t left = size;
    while (left > 0) {
      const ssize_t n = ::write(fd.get(), p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::unlinkat(dir_fd, tmp.c_str(), 0);
        fail_io("cannot write", tmp_label, err);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0 || fd.close_now() != 0) {
      const int err = errno;
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      fail_io("cannot flush", tmp_label, err);
    }
  }
  // rename replaces whatever entry `name` is (a link included) and never
  // writes through it.
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    fail_io("cannot rename '" + tmp_label + "' to", label, err);
  }
  // The rename is durable only once the folder's entry is on disk.
  if (::fsync(dir_fd) != 0) fail_io("cannot fsync the folder of", label, errno);
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string folder = parent_folder(path);
  const auto slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) fail_io("cannot write", path, EISDIR);
  Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) fail_io("cannot open folder", folder, errno);
  write_file_atomic_at(dir.get(), name, path, data, size);
}

std::string gunzip(const std::vector<uint8_t>& bytes, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw Failure(UMLOS_INTERNAL, path + ": zlib inflateInit2 failed");
  std::string out;
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  char buf[1 << 16];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      throw Failure(UMLOS_DATA_LOSS, path + ": gzip data is invalid (" + msg + ")");
    }
    out.append(buf, sizeof buf - zs.avail_out);
    if (rc != Z_STREAM_END && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw Failure(UMLOS_DATA_LOSS, path + ": gzip data is truncated");
    }
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

}  // namespace umlos
