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

// EACCES and EPERM are the user's permissions, not a broken device: they get
// PERMISSION_DENIED so a script can tell them apart from I/O errors.
[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err) {
  const umlos_status code = (err == EACCES || err == EPERM) ? UMLOS_PERMISSION_DENIED : UMLOS_IO_ERROR;
  throw Failure(code, what + " '" + path + "': " + std::strerror(err));
}

}  // namespace

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

namespace {

[[noreturn]] void fail_too_large(const std::string& path, uint64_t limit, const std::string& size) {
  throw Failure(UMLOS_RESOURCE_EXHAUSTED,
                "'" + path + "' is " + size + ", above the reader's limit of " + std::to_string(limit) + " bytes");
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

std::vector<uint8_t> read_file(const std::string& path, uint64_t limit) {
  // O_NONBLOCK: opening a FIFO for reading blocks until a writer comes;
  // non-blocking, the open returns at once and fstat can refuse it.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) fail_io("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_io("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) fail_io("cannot read", path, EISDIR);
  if (!S_ISREG(st.st_mode))
    throw Failure(UMLOS_INVALID_ARGUMENT,
                  "'" + path + "' is " + file_type_name(st.st_mode) + ", expected a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > limit)
    fail_too_large(path, limit, std::to_string(st.st_size) + " bytes");
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_io("cannot read", path, errno);
    }
    if (n == 0) break;
    // The file may grow while we read: the limit holds for what is read.
    if (out.size() + static_cast<size_t>(n) > limit)
      fail_too_large(path, limit, "more than " + std::to_string(limit) + " bytes (it grew while read)");
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

std::string read_text_file(const std::string& path, uint64_t limit) {
  const std::vector<uint8_t> bytes = read_file(path, limit);
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

std::string gunzip(const std::vector<uint8_t>& bytes, const std::string& path, uint64_t limit) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw Failure(UMLOS_INTERNAL, path + ": zlib inflateInit2 failed");
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
    const size_t produced = sizeof buf - zs.avail_out;
    if (out.size() + produced > limit) {
      inflateEnd(&zs);
      throw Failure(UMLOS_RESOURCE_EXHAUSTED, "'" + path + "' decompresses to more than " + std::to_string(limit) +
                                                  " bytes, the gzip reader's limit");
    }
    out.append(buf, produced);
    if (rc != Z_STREAM_END && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw Failure(UMLOS_DATA_LOSS, path + ": gzip data is truncated");
    }
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

}  // namespace umlos
